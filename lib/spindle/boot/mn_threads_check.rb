# frozen_string_literal: true

module Spindle
  # Ruby 3.3's M:N thread scheduler (RUBY_MN_THREADS=1, experimental there)
  # stalled the threads engine under load on Ruby 3.3.8: within a minute of
  # hello-world load every Ruby thread sat idle (the reactor in its select,
  # the pool waiting for work) while the process spun at more than a core and
  # answered nothing, for good. The cluster cannot tell: no request is in
  # flight, so no worker timeout fires. The other engines served through the
  # same load (docs/ENGINES.md). This check says so at boot (Server#warn_at_boot), with
  # what to do.
  module MnThreadsCheck
    ENGINES = %w[threads].freeze

    module_function

    # The warning for engine on the Ruby described, or nil: another engine,
    # or M:N threads off (a Ruby running them says "+MN" in its description).
    def warning(engine, description: RUBY_DESCRIPTION)
      return nil unless ENGINES.include?(engine.to_s) && description.include?("+MN")

      "RUBY_MN_THREADS=1 is set, and Ruby's M:N threads stalled the #{engine} engine " \
        "under load in our tests (Ruby 3.3.8: every thread idle, no request answered, the process " \
        "spinning). Unset RUBY_MN_THREADS, or use another engine (docs/ENGINES.md)"
    end
  end
end
