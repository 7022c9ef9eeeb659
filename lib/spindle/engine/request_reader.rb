# frozen_string_literal: true

require_relative "timeouts"

module Spindle
  module Engine
    # Reads one whole request from a connection, waiting on the socket as long
    # as its deadlines allow. The wait is an ordinary IO#wait_readable, so on a
    # plain thread it blocks and under a Fiber::Scheduler it yields: the
    # blocking and fiber engines share this loop unchanged.
    class RequestReader
      def initialize(handler, config)
        @handler = handler
        @config = config
      end

      # :complete when a request is ready to serve; :closed when the connection
      # was closed instead (end of stream, timeout, refused input).
      def read(conn)
        return :complete if conn.buffered? && conn.advance == :complete

        loop do
          case conn.read_nonblock
          when :data then return :complete if conn.advance == :complete
          when :eof then return close(conn)
          when :wait
            wait = conn.next_deadline(Timeouts.now, @config) - Timeouts.now
            return expire(conn) unless wait.positive? && conn.io.wait_readable(wait)
          end
        end
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        close(conn)
      end

      private

      def expire(conn)
        Timeouts.expire(conn, @handler)
        :closed
      end

      def close(conn)
        conn.close
        :closed
      end
    end
  end
end
