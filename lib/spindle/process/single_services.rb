# frozen_string_literal: true

require_relative "single_stats"
require_relative "../metrics/single_process"
require_relative "single_control"
require_relative "memory_limit"
require_relative "single_sidecars"

module Spindle
  # What a process serving alone runs beside its engine, each on threads of
  # its own: --metrics, --control, --worker-memory-limit, --sidecar and
  # --restart-file, as a cluster's master runs them for its workers. One
  # stats source serves the first two. They follow the server's phase: its
  # drain is theirs (#draining).
  class SingleServices
    # restart: the process's SingleRestart.
    def initialize(config, log, server, restart)
      @sidecars = SingleSidecars.new(config, log) unless config.sidecars.empty?
      @restart = restart
      @restart_file = config.restart_file
      stats = SingleStats.new(config, server, log, sidecars: @sidecars)
      @metrics = Metrics::SingleProcess.new(config, log, stats) if config.metrics
      @control = SingleControl.new(config, stats) if config.control
      @memory = MemoryLimit.new(config.worker_memory_limit, log, restart) if config.worker_memory_limit
      phase = server.phase
      phase.on_change do |name|
        draining(handed_over: phase.handed_over?) if name == :draining
        @sidecars&.kill if name == :forced
      end
    end

    # Raises Listener::Error when an endpoint cannot listen. successor: this
    # process was started by a USR2 and waits for its predecessor's
    # addresses; its control endpoint waits until #taking_over, as a new
    # cluster master's does: should it fail before it serves, its
    # predecessor must still answer spindlectl.
    def start(successor:)
      @metrics&.start(successor: successor)
      @control&.start unless successor
      @memory&.start
      @sidecars&.start
      @restart.watch_file(@restart_file) if @restart_file
      self
    end

    # A successor serves, and is about to tell its predecessor to drain: a
    # unix control socket is taken over from the predecessor now, while it
    # still answers on it (SingleControl#start).
    def taking_over
      @control&.start(successor: true)
    end

    def close
      @sidecars&.close
      @memory&.stop
      @metrics&.close
      @control&.close
    end

    private

    # The process drains. Handing over to a successor, it lets the
    # endpoints' addresses go: the successor waits for them. Otherwise they
    # keep answering (stats during a long drain) until the process exits.
    def draining(handed_over:)
      @memory&.stop
      @sidecars&.stop
      return unless handed_over

      @metrics&.close
      @control&.close
    end
  end
end
