# frozen_string_literal: true

module Spindle
  # A Rails app on a fiber engine needs ActiveSupport's isolation level set to
  # :fiber. Left at :thread, every request on one thread shares the state Rails
  # keeps per thread: ActiveRecord hands all the fibers of a thread one
  # database connection (their queries queue behind each other) and
  # per-request state such as CurrentAttributes leaks between requests, which
  # surfaces as NoMethodErrors deep inside ActiveRecord. Nothing in Rails says
  # so; this check says it at boot (Server#warn_at_boot), with the line to add.
  module RailsCheck
    FIBER_ENGINES = %w[fibers hybrid].freeze
    FIX = "config.active_support.isolation_level = :fiber"

    module_function

    # The warning for this engine and the loaded app, or nil when all is well
    # (another engine, no Rails, or the level already :fiber).
    def isolation_warning(engine)
      return nil unless FIBER_ENGINES.include?(engine.to_s)
      return nil unless defined?(::ActiveSupport::IsolatedExecutionState)

      level = ::ActiveSupport::IsolatedExecutionState.isolation_level
      return nil if level == :fiber

      "the #{engine} engine serves each request in its own fiber, but this Rails app's " \
        "isolation level is #{level.inspect}: requests on one thread share their database connection " \
        "and per-request state. Add `#{FIX}` to config/application.rb (docs/ENGINES.md)"
    end
  end
end
