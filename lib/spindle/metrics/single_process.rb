# frozen_string_literal: true

require_relative "endpoint"
require_relative "report"

module Spindle
  module Metrics
    # --metrics for a process serving alone (no -w): the same endpoint and the
    # same names as a cluster's, served by threads of this process, with the
    # process reported as worker "0" (SingleStats, which spindlectl stats
    # reads too).
    class SingleProcess
      RETRY = 0.5 # seconds between two tries for the address a predecessor still holds

      # stats: a SingleStats.
      def initialize(config, log, stats)
        @log = log
        @stats = stats
        @endpoint_name = config.metrics
        @endpoint = Endpoint.new(config.metrics, source: method(:exposition))
      end

      # Raises Listener::Error when the address is taken. A successor (USR2)
      # instead waits for its predecessor to let the address go, which it does
      # when it starts to drain (SingleServices#draining).
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
        Report.new("workers" => [@stats.worker(durations: true)]).to_s
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
    end
  end
end
