# frozen_string_literal: true

module Spindle
  module Engine
    # Finds what defeats a fiber engine: code that holds the event loop without
    # yielding (CPU work, a C extension that blocks, IO.select on Ruby 3.1, file
    # reads). A fiber in the loop records a heartbeat; a watchdog thread warns,
    # once per stall, when the heartbeat is older than the threshold, with the
    # backtrace of where the loop's thread is stuck.
    class StallDetector
      def initialize(log, threshold)
        @log = log
        @threshold = threshold
        @interval = threshold / 4.0
      end

      def start(task)
        loop_thread = Thread.current
        @beat = now
        @heart = task.async(transient: true) { beat }
        @watchdog = Thread.new { watch(loop_thread) }
        self
      end

      def stop
        @heart&.stop
        @watchdog&.kill
      end

      private

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      def beat
        loop do
          @beat = now
          sleep @interval
        end
      end

      def watch(loop_thread)
        reported = false
        loop do
          sleep @interval
          lag = now - @beat
          if lag < @threshold
            reported = false
          elsif !reported
            reported = true
            report(loop_thread, lag)
          end
        end
      end

      def report(loop_thread, lag)
        where = (loop_thread.backtrace || []).reject { |line| line.include?("/gems/") }.first(8)
        @log.error("event loop stalled for #{(lag * 1000).round}ms (threshold " \
                   "#{(@threshold * 1000).round}ms); the loop's thread is at:\n    #{where.join("\n    ")}")
      end
    end
  end
end
