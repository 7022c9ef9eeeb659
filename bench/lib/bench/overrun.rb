# frozen_string_literal: true

require "timeout"

module Bench
  # The last resort behind a --quick budget. A budget only stops a scenario
  # from starting new trials; one trial that is stuck can still run until its
  # own bounds (a readiness deadline, a drain wait) let go, minutes later. So
  # under --quick a scenario still running GRACE_S after its deadline is
  # interrupted: its ensure blocks stop its servers (ServerProcess#stop defers
  # the interrupt until the stop is done), it writes no report, and bench/run
  # goes on with the next scenario.
  #
  # An Exception, not a StandardError: a scenario's own `rescue StandardError`
  # around one server must not swallow it and carry on.
  class Overrun < Exception # rubocop:disable Lint/InheritException
    GRACE_S = 45

    # Runs the block, interrupted GRACE_S after the deadline under --quick;
    # a full run is never interrupted (its --deadline only stops new trials).
    def self.guard(settings, grace: GRACE_S, &block)
      return yield unless settings.quick && settings.deadline

      Timeout.timeout(settings.deadline.left + grace, self, "still running #{grace} s after #{settings.deadline.what} passed", &block)
    end
  end
end
