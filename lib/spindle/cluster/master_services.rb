# frozen_string_literal: true

require_relative "control_server"
require_relative "../metrics/endpoint"
require_relative "../metrics/cluster_source"
require_relative "../ops/pid_file"
require_relative "../systemd/cluster_notes"

module Spindle
  module Cluster
    # What the master offers beside its workers: the control socket
    # (spindlectl), the metrics endpoint, the pid file and its notes to
    # systemd. Each is optional (--control, --metrics, --pid, NOTIFY_SOCKET).
    #
    # A successor (Takeover) boots without the control socket and the pid
    # file, which stay its parent's until it takes over (#take_over); it
    # cannot have the metrics address either while the parent still serves
    # on it, so it tries again every METRICS_RETRY until the parent lets go.
    #
    # Every listener it opens is closed in the workers forked after it
    # (#attach gives it the spawner).
    class MasterServices
      METRICS_RETRY = 1.0 # seconds between tries for the metrics address the parent holds

      attr_reader :notes, :control

      # queue: the master's SignalQueue (commands and stats requests land
      # there); in_charge: -> { may this master speak to systemd now }.
      def initialize(config:, log:, queue:, clock:, in_charge:, notes: Systemd::ClusterNotes.from_env(log))
        @config = config
        @log = log
        @queue = queue
        @clock = clock
        @notes = notes.speaking_when(in_charge)
        @spawner = nil
        @metrics = nil
        @metrics_retry_at = nil # while a successor waits for its parent's metrics address
      end

      # A successor writes the pid file once it takes over; until then it
      # names the parent, which is alive and allowed to be.
      def claim_pid_file(parent)
        @pid_file = PidFile.for(@config, @log)
        @pid_file&.check!(predecessor: parent)
        @pid_file&.write unless parent
      end

      def open_control
        @control = ControlServer.open(@config, @queue) if @config.control
        @spawner&.close_in_child(@control.io) if @control
      end

      # Listeners opened from now on are closed in each worker it forks.
      def attach(spawner)
        @spawner = spawner
        spawner.close_in_child(@control.io) if @control
      end

      # The listener is opened on the master's thread, so every worker forked
      # after it knows to close it. parent: a successor's, who holds the address.
      def open_metrics(parent)
        return unless @config.metrics

        @metrics = Metrics::Endpoint.new(@config.metrics, source: Metrics::ClusterSource.new(@queue))
        return start_metrics unless parent

        @metrics_retry_at = 0
        @log.info("spindle: metrics at #{@config.metrics} once the previous master (pid #{parent}) lets it go")
      end

      # Every tick of the master's loop.
      def tick
        retry_metrics if @metrics_retry_at
      end

      def metrics_waiting? = !@metrics_retry_at.nil?

      # A parent that hands over lets go of the address its successor waits for.
      def let_go_of_metrics = @metrics&.close

      # The control socket and the pid file move to a successor whose workers
      # serve; failing to open either must not stop it.
      def take_over
        take_over_control
        take_over_pid_file
      end

      def remove_pid_file = @pid_file&.remove

      # The endpoints, on the master's way out (the pid file goes last,
      # #remove_pid_file; a forced stop removes it alone and exits at once).
      def close
        @control&.close
        @metrics&.close
      end

      private

      def start_metrics
        @metrics.start
        @spawner&.close_in_child(@metrics.io)
        @log.info("spindle: metrics at #{@metrics.uri} (GET /metrics)")
      end

      def retry_metrics
        now = @clock.call
        return if now < @metrics_retry_at

        start_metrics
        @metrics_retry_at = nil
      rescue Listener::Error
        @metrics_retry_at = now + METRICS_RETRY
      end

      def take_over_control
        open_control
      rescue StandardError => e
        @log.error("control endpoint not opened: #{e.message}")
      end

      def take_over_pid_file
        @pid_file&.write
      rescue PidFile::Error => e
        @log.error(e.message)
      end
    end
  end
end
