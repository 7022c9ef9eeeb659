# frozen_string_literal: true

module Spindle
  # Which Ruby runs this process, for what changed between versions (the
  # GVL handoff in 3.3, its GC limits, IO#timeout in 3.2).
  module RubyVersion
    module_function

    # Whether version is wanted ("3.3") or later.
    def at_least?(wanted, version = RUBY_VERSION) = Gem::Version.new(version) >= Gem::Version.new(wanted)
  end
end
