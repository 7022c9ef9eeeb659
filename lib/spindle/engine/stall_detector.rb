# frozen_string_literal: true

require_relative "thread_probe"
require_relative "stall_report"

module Spindle
  module Engine
    # Finds what defeats a fiber engine: code that holds the event loop without
    # yielding (CPU work, a C extension that blocks, IO.select on Ruby 3.1, file
    # reads). A fiber in the loop records a heartbeat; a watchdog thread warns,
    # once per stall, when the heartbeat is older than the threshold, with the
    # innermost frames of the code that holds the loop's thread: the app's
    # frames, wherever they live (gems too), without the loop's own.
    #
    # A loop thread that merely waited for Ruby's GVL while other threads ran
    # (hybrid under load: its sibling loops, the app's own threads), or for a
    # CPU on an overloaded machine, is not stalled by its own code. The
    # ThreadProbe tells it apart: the loop thread was on the CPU for little of
    # the lag, and it is runnable or waits on a futex (the GVL's wait; the
    # fiber scheduler turns sleep, Mutex, Queue and Thread#join into loop
    # waits, so little else waits so in a loop thread). That is noted once per
    # process, not reported as a stall. A loop held by CPU work is on the CPU;
    # one blocked in a call sleeps in that call's syscall.
    class StallDetector
      # Below this share of the lag on the CPU, a loop thread did not hold it.
      OWN_SHARE = 0.5

      @gvl_noted = false

      class << self
        # Notes a GVL wait once per process; true the first time.
        def note_gvl_wait?
          return false if @gvl_noted

          @gvl_noted = true
        end
      end

      def initialize(log, threshold)
        @log = log
        @threshold = threshold
        @interval = threshold / 4.0
        @report = StallReport.new(threshold)
      end

      # When the loop's scheduler last ran the heartbeat (CLOCK_MONOTONIC),
      # which it does every interval seconds.
      def last_beat = @beat
      attr_reader :interval

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
        probe = ThreadProbe.new(loop_thread)
        reported = false
        healthy = sample(probe)
        loop do
          sleep @interval
          lag = now - @beat
          if lag < @threshold
            reported = false
            healthy = sample(probe)
          elsif !reported
            reported = true
            classify(probe, loop_thread, lag, *healthy)
          end
        end
      end

      # [wall clock, the loop thread's CPU seconds]
      def sample(probe) = [now, probe.cpu_seconds]

      # The loop thread's share of the lag on the CPU; nil when unknown.
      def cpu_share(probe, since, cpu_then)
        cpu_now = probe.cpu_seconds
        cpu_now && cpu_then ? (cpu_now - cpu_then) / (now - since) : nil
      end

      def classify(probe, loop_thread, lag, since, cpu_then)
        share = cpu_share(probe, since, cpu_then)
        if share && share < OWN_SHARE && (probe.runnable? || probe.waiting_on_futex?)
          note_gvl_wait(lag)
        else
          report(loop_thread, lag, share)
        end
      end

      def note_gvl_wait(lag)
        return unless self.class.note_gvl_wait?

        @log.info("event loop waited #{(lag * 1000).round}ms for Ruby's GVL or a CPU while other threads ran " \
                  "(not a stall; noted once). Many loop threads per process on few cores: prefer more processes.")
      end

      # A warning, not an error: the server serves on; LOGGING.md keeps ERROR
      # for what failed (an app exception, a dead worker, a forced stop).
      def report(loop_thread, lag, share)
        @log.warn(@report.message(lag, share, loop_thread.backtrace || []))
      end
    end
  end
end
