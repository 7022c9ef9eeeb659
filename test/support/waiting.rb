# frozen_string_literal: true

# The one polling wait of the tests: evaluate a condition until it holds, and
# fail the test when the deadline passes. The deadline bounds a hang; it is
# never a timing expectation. (SpindleProcess waits on its own condition
# variable instead: its reader threads signal every change.)
module Waiting
  DEADLINE = 30

  # Returns the block's first truthy value. what: the condition, for the
  # failure message; interval: seconds between two evaluations.
  def wait_until(what, deadline: DEADLINE, interval: 0.05)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    loop do
      result = yield
      return result if result
      flunk "#{what}: not reached within #{deadline}s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > limit

      sleep interval
    end
  end
end
