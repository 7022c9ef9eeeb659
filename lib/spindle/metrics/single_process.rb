# frozen_string_literal: true

require "time"
require_relative "../process_stats"
require_relative "endpoint"
require_relative "report"

module Spindle
  module Metrics
    # --metrics for a process serving alone (no -w): the same endpoint and the
    # same names as a cluster's, served by threads of this process, with the
    # process reported as worker "0". Read from the handler's RequestTracker
    # (thread-safe) and the engine's backlog, never through the engine.
    class SingleProcess
      RETRY = 0.5 # seconds between two tries for the address a predecessor still holds

      def initialize(config, log, server)
        @log = log
        @server = server
        @started_at = Time.now
        @endpoint_name = config.metrics
        @endpoint = Endpoint.new(config.metrics, source: method(:exposition))
      end

      # Raises Listener::Error when the address is taken. A successor (USR2)
      # instead waits for its predecessor to let the address go, which it does
      # when it starts to drain (Server#drain).
      def start(successor: false)
        return listening(@endpoint.start) unless successor

        @log.info("spindle: metrics at #{@endpoint_name} once the previous process lets it go")
        @waiter = Thread.new { start_when_free }
        self
      end

      def close
        @waiter&.kill
        @endpoint.close
      end

      def exposition
        Report.new("workers" => [entry]).to_s
      end

      private

      def start_when_free
        @endpoint.start
        listening(@endpoint)
      rescue Listener::Error
        sleep RETRY
        retry
      end

      def listening(endpoint)
        @log.info("spindle: metrics at #{endpoint.uri} (GET /metrics)")
        self
      end

      def entry
        tracker = @server.handler.tracker
        { "index" => 0, "pid" => Process.pid, "state" => "serving", "generation" => 0,
          "booted_at" => @started_at.utc.iso8601, "requests" => tracker.served, "in_flight" => tracker.in_flight,
          "backlog" => @server.backlog, "oldest_request_age" => tracker.oldest_age.round(3),
          "memory" => ProcessStats.memory, "gc" => ProcessStats.gc, "restarts" => 0, "durations" => tracker.durations,
          "log_lines_dropped" => @log.dropped_lines }
      end
    end
  end
end
