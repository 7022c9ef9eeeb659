# frozen_string_literal: true

require_relative "../ops/process_stats"

module Spindle
  # --worker-memory-limit for a process serving alone (no -w). A cluster
  # replaces a worker past the limit, its replacement first; alone, the
  # same is a hot restart of the process itself (USR2, SingleRestart): a
  # new process from the same command line takes the listeners over, and
  # this one drains and exits, its memory returned, no connection refused.
  # That is what the limit promises an operator: the server's memory comes
  # back down with no request failed. Merely logging would leave it growing
  # until the kernel's OOM killer cuts requests off; exiting would refuse
  # connections until a supervisor restarted it.
  #
  # A process that cannot restart itself (started through rackup where
  # there is no /proc to read its command line from, RackupRestart) says so
  # at WARN, once each time its memory passes the limit.
  class MemoryLimit
    EVERY = 5.0 # seconds between two looks, as the master's for its workers
    # A restart ends this process once the new one serves; if this one still
    # runs this long after, that restart failed (and was logged): try again.
    RETRY = 60.0

    # restart: the process's SingleRestart.
    def initialize(limit_mib, log, restart)
      @limit = limit_mib * 1024 * 1024
      @limit_mib = limit_mib
      @log = log
      @restart = restart
      @next_restart = 0
      @warned = false
    end

    def start
      @thread = Thread.new do
        loop do
          sleep EVERY
          check
        end
      end
      self
    end

    # The process drains: nothing more to recycle.
    def stop = @thread&.kill

    # uss: bytes of private memory (ProcessStats), given by tests.
    def check(uss = ProcessStats.memory&.fetch(:uss).to_i)
      return @warned = false if uss <= @limit
      return restart(uss) if @restart.command_line?

      warn_once(uss)
    end

    private

    def restart(uss)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return if now < @next_restart || @restart.successor?

      @next_restart = now + RETRY
      @log.info("spindle: memory #{mib(uss)} MiB (USS) is over --worker-memory-limit #{@limit_mib} MiB: " \
                "restarting in place (as USR2), the new process takes over without a refused connection")
      Process.kill(:USR2, Process.pid)
    end

    def warn_once(uss)
      return if @warned

      @warned = true
      @log.warn("memory #{mib(uss)} MiB (USS) is over --worker-memory-limit #{@limit_mib} MiB, and this process " \
                "cannot restart itself (started through rackup, with no /proc to read its command line from): " \
                "restart it, or serve with bin/spindle, whose USR2 restart the limit uses")
    end

    def mib(bytes) = (bytes / 1_048_576.0).round
  end
end
