# frozen_string_literal: true

require_relative "timeouts"

module Spindle
  module Engine
    # Reads one whole request from a connection. #read waits on the socket as
    # long as the connection's deadlines allow; the wait is an ordinary
    # IO#wait_readable, so under a Fiber::Scheduler it yields (the fiber
    # engines). #poll never waits (the blocking engine and the reactor, which
    # wait in a selector instead).
    class RequestReader
      def initialize(handler, config)
        @handler = handler
        @config = config
      end

      # :complete when a request is ready to serve; :closed when the connection
      # was closed instead (end of stream, timeout, refused input).
      def read(conn)
        loop do
          state = poll(conn)
          return state unless state == :incomplete

          wait = conn.next_deadline(Timeouts.now, @config) - Timeouts.now
          return expire(conn) unless wait.positive? && conn.io.wait_readable(wait)
        end
      end

      # Parses what has already arrived, without waiting: :complete,
      # :incomplete (more is to come) or :closed.
      def poll(conn)
        return :complete if conn.buffered? && conn.advance == :complete

        loop do
          case conn.read_nonblock
          when :data then return :complete if conn.advance == :complete
          when :wait then return :incomplete
          when :eof then return close(conn)
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
