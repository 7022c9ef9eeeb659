# frozen_string_literal: true

require_relative "../cluster/control_session"
require_relative "report"

module Spindle
  module Metrics
    # A cluster's numbers, for the master's endpoint: asked of the master loop
    # through its queue, like `spindlectl stats`, so its state is only read on
    # its own thread. Rendering the text happens here, on the scrape's thread.
    class ClusterSource
      # Shorter than Prometheus's default scrape_timeout (10 s): a scraper
      # gets a 503 it can record rather than a timeout.
      REPLY_DEADLINE = 5

      # queue: the master's SignalQueue; it answers [:metrics, reply].
      def initialize(queue, reply_deadline: REPLY_DEADLINE)
        @queue = queue
        @reply_deadline = reply_deadline
      end

      # The exposition, or nil when the master did not answer in time.
      def call
        reply = Cluster::ControlSession::Reply.new
        @queue.push([:metrics, reply])
        stats = reply.wait(@reply_deadline)
        stats && Report.new(stats).to_s
      end
    end
  end
end
