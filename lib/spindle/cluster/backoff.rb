# frozen_string_literal: true

module Spindle
  module Cluster
    # The wait before starting again something that keeps failing: FIRST
    # seconds after the first failure, doubled after each one in a row, at
    # most MAX. A worker's app that will not boot and a sidecar that keeps
    # dying are both retried this way (Supervisor, Sidecars), so neither is
    # forked in a tight loop nor left for long once it would work.
    class Backoff
      FIRST = 0.5
      MAX = 30

      attr_reader :failures

      def initialize(first: FIRST, max: MAX)
        @first = first
        @max = max
        @failures = 0
      end

      # One more failure in a row: the seconds to wait before the next try.
      def failed
        @failures += 1
        [@first * (2**(@failures - 1)), @max].min
      end

      # It worked: the next failure waits FIRST again.
      def reset = @failures = 0
    end
  end
end
