# frozen_string_literal: true

module Spindle
  module Systemd
    # WatchdogSec= in a unit: systemd sets WATCHDOG_USEC (and WATCHDOG_PID, the
    # process it watches) and kills the service when no WATCHDOG=1 arrives
    # within that time. Spindle pings every half of it, as sd_watchdog_enabled(3)
    # advises. In cluster mode the ping comes from the master's own loop
    # (#tick), so a master that hangs stops pinging and systemd restarts it;
    # a single process pings from a thread of its own (#start_thread).
    class Watchdog
      # The watchdog systemd asked this process for, or nil.
      #
      # WATCHDOG_PID is removed once read: a new master started by USR2
      # inherits the environment and must take the watchdog over, and
      # sd_watchdog_enabled(3) reads a missing WATCHDOG_PID as "this process".
      # A WATCHDOG_PID naming another process means the watchdog is not ours,
      # and WATCHDOG_USEC goes too, so no child of ours takes it for its own.
      def self.from_env(notifier, env = ENV)
        return nil unless notifier.enabled?

        usec = Integer(env["WATCHDOG_USEC"].to_s, 10, exception: false)
        pid = env.delete("WATCHDOG_PID")
        if pid && Integer(pid, 10, exception: false) != Process.pid
          env.delete("WATCHDOG_USEC")
          return nil
        end
        return nil unless usec&.positive?

        new(notifier, usec / 2_000_000.0)
      end

      attr_reader :interval

      def initialize(notifier, interval)
        @notifier = notifier
        @interval = interval
        @next_at = 0
      end

      # From the master's loop: pings when half the watchdog time has passed.
      def tick
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if now < @next_at

        @notifier.watchdog
        @next_at = now + @interval
      end

      # Single process: a thread pings. It proves the process and its VM are
      # alive (a C extension holding the GVL stops it), not that the engine
      # accepts; there is no master to watch the engine from outside.
      def start_thread
        Thread.new do
          loop do
            @notifier.watchdog
            sleep @interval
          end
        end
      end
    end
  end
end
