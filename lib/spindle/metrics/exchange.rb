# frozen_string_literal: true

require "io/wait"
require "socket"
require_relative "exposition"
require_relative "../side_endpoint"

module Spindle
  module Metrics
    # One scrape on its own connection: a request head in, one response out,
    # then the connection is closed. This is not the app's HTTP server and
    # knows just enough HTTP/1.x for a scraper: `GET /metrics` (or HEAD), any
    # query string ignored. The head is read before this starts
    # (SideEndpoint::Reception, bounded by max_head and read_deadline).
    # Every step is bounded, so a client that sends nothing, sends without
    # end or reads nothing costs a few seconds and max_head bytes at most.
    class Exchange
      # max_head: bytes the request head may take. read_deadline: seconds from
      # the connection to the end of the head. write_deadline: seconds the
      # client may take to read the response.
      Limits = Struct.new(:max_head, :read_deadline, :write_deadline, keyword_init: true)
      LIMITS = Limits.new(max_head: 4096, read_deadline: 5, write_deadline: 5).freeze
      # Closing with unread input makes the kernel send RST, which can destroy
      # the response before the client reads it (a 431 after a long head, a
      # POST's body): after such a refusal the write side is shut first and
      # up to LINGER_BYTES of input are read and dropped, for at most LINGER
      # seconds. A scrape's own head was read whole; nothing is left of it.
      LINGER_AFTER = [400, 405, 431].freeze
      LINGER = 1
      LINGER_BYTES = 64 * 1024

      PATH = "/metrics"
      REQUEST_LINE = %r{\A([A-Z]+) (\S+) HTTP/1\.[01]\r?\n}
      HEAD_END = /\r?\n\r?\n/
      REASONS = { 200 => "OK", 400 => "Bad Request", 404 => "Not Found", 405 => "Method Not Allowed",
                  408 => "Request Timeout", 431 => "Request Header Fields Too Large",
                  503 => "Service Unavailable" }.freeze

      def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # source: #call returns the exposition text, or nil when the numbers
      # cannot be had now (the master did not answer in time).
      def initialize(socket, source:, limits: LIMITS)
        @socket = socket
        @source = source
        @limits = limits
      end

      # What a request is to the reception: a head, through its blank line.
      def self.request_shape(limits)
        SideEndpoint::Reception::Shape.new(max_bytes: limits.max_head, seconds: limits.read_deadline,
                                           complete: ->(bytes) { bytes.match?(HEAD_END) })
      end

      # outcome, head: how the request arrived (SideEndpoint::Reception).
      # Never raises: whatever the client does ends here, with the socket closed.
      def run(outcome, head)
        case outcome
        when :request then respond(head)
        when :too_long then reply(431, "a request head is at most #{@limits.max_head} bytes\n")
        when :timeout then reply(408, "no complete request head within #{@limits.read_deadline}s\n")
        end
      rescue StandardError
        nil # EPIPE, ECONNRESET: the client is gone; the endpoint carries on
      ensure
        @socket.close unless @socket.closed?
      end

      # The answer to a request line whose head has arrived.
      def respond(head)
        method, path = REQUEST_LINE.match(head)&.captures
        return reply(400, "send GET #{PATH} HTTP/1.1\n") unless method
        return reply(404, "the metrics are at #{PATH}\n") unless path.split("?", 2).first == PATH
        return reply(405, "GET or HEAD\n", allow: true) unless %w[GET HEAD].include?(method)

        text = @source.call
        return reply(503, "the numbers are not available now; try again\n") unless text

        reply(200, text, content_type: Exposition::CONTENT_TYPE, head_only: method == "HEAD")
      end

      private

      def read_some(size, limit) = SideEndpoint.read_before(@socket, size, limit)

      def reply(status, body, content_type: "text/plain; charset=utf-8", head_only: false, allow: false)
        head = +"HTTP/1.1 #{status} #{REASONS.fetch(status)}\r\ncontent-type: #{content_type}\r\n" \
                "content-length: #{body.bytesize}\r\nconnection: close\r\n"
        head << "allow: GET, HEAD\r\n" if allow
        write_all("#{head}\r\n#{body unless head_only}".b)
        linger if LINGER_AFTER.include?(status)
      end

      def linger
        @socket.shutdown(Socket::SHUT_WR)
        limit = Exchange.now + LINGER
        dropped = 0
        while dropped < LINGER_BYTES
          chunk = read_some(LINGER_BYTES, limit)
          break unless chunk.is_a?(String)

          dropped += chunk.bytesize
        end
      end

      # Gives up quietly past write_deadline (SideEndpoint.write_within).
      def write_all(data)
        SideEndpoint.write_within(@socket, data, @limits.write_deadline)
      end
    end
  end
end
