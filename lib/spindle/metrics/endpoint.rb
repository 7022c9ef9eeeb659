# frozen_string_literal: true

require_relative "../side_endpoint"
require_relative "exchange"

module Spindle
  module Metrics
    # The listener of --metrics: tcp://HOST:PORT or unix://PATH, served by
    # threads of its own, never by the app's engine, so a slow or stuck scrape
    # never holds a request and a full app never holds a scrape. One thread
    # reads every request head (SideEndpoint::Reception); each scrape whose
    # head has arrived gets a thread (Exchange), at most MAX_CLIENTS at once;
    # one past the cap is answered 503 without waiting and closed.
    class Endpoint < SideEndpoint
      MAX_CLIENTS = 4
      BUSY = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n" \
             "connection: close\r\n\r\nbusy\n"

      # source: #call returns the exposition text, or nil (see Exchange).
      def initialize(uri, source:, limits: Exchange::LIMITS, max_clients: MAX_CLIENTS)
        super(uri, max_clients: max_clients)
        @source = source
        @limits = limits
      end

      private

      def kind = "metrics endpoint"

      def request_shape = Exchange.request_shape(@limits)

      def session(client, outcome, head)
        Exchange.new(client, source: @source, limits: @limits).run(outcome, head)
      end

      def busy(client)
        client.write_nonblock(BUSY, exception: false)
      end
    end
  end
end
