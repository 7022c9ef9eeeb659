# frozen_string_literal: true

require_relative "../cluster/sidecars"

module Spindle
  # The sidecars (--sidecar) of a process serving alone: the same
  # Cluster::Sidecars a master runs, ticked on a thread of their own, since
  # this process's threads belong to its engine. Rails 8 runs Solid Queue
  # inside Puma without workers too (SOLID_QUEUE_IN_PUMA in its generated
  # config), so refusing them here would turn that deploy away. Only one
  # thread at a time touches them (the lock): the ticking one, the signal
  # thread that stops them, and stats.
  #
  # A hot restart (USR2) hands over like a master's: the successor starts
  # its own once it serves, this process stops its own when it drains.
  class SingleSidecars
    TICK = 0.5

    def initialize(config, log)
      @sidecars = Cluster::Sidecars.new(config.sidecars, log: log, stop_timeout: config.shutdown_timeout)
      @lock = Mutex.new
      @thread = nil
    end

    def report = @lock.synchronize { @sidecars.report }

    # Once the process serves (the app is loaded by then).
    def start
      @lock.synchronize { @sidecars.start }
      @thread = Thread.new { run }
    end

    # The process drains: TERM now, KILL after --shutdown-timeout.
    def stop = @lock.synchronize { @sidecars.stop }

    # A forced stop: the process exits at once.
    def kill = @lock.synchronize { @sidecars.kill_all }

    # On the way out: waits until they are gone, at most --shutdown-timeout
    # and a tick (then they were killed).
    def close
      stop
      @thread&.join
    end

    private

    def run
      Thread.current.name = "spindle sidecars"
      sleep TICK until @lock.synchronize { tick }
    end

    # True once stopping and none is left.
    def tick
      @sidecars.tick
      @sidecars.stopping? && @sidecars.done?
    end
  end
end
