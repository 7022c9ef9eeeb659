# frozen_string_literal: true

require_relative "output_budget"
require_relative "connections"

module Spindle
  module Engine
    # Reads one whole request from a connection. #read waits on the socket;
    # the wait is an ordinary IO#wait_readable, so under a Fiber::Scheduler it
    # yields (the fiber engines), and it has no timeout of its own: the fiber
    # engines' DeadlineSweeper ends a wait past the connection's deadline.
    # #read_next is the fiber engines' alone: it yields to their scheduler.
    # #poll never waits (the blocking engine and the reactor, which wait in a
    # selector instead).
    class RequestReader
      # deadlines: the engine's Deadlines, renewed before each wait;
      # connections: the loop's Connections, which closes what ends here;
      # budget: the process's OutputBudget (the engine's).
      def initialize(handler, config, deadlines, connections, budget: OutputBudget.for(config))
        @handler = handler
        @deadlines = deadlines
        @connections = connections
        @budget = budget
      end

      # :complete when a request is ready to serve; :closed when the connection
      # was closed instead (end of stream), :refused when its input was (see
      # #poll). A complete request waits while the process's output budget is
      # spent: its app call would add a response to what slow readers already
      # hold.
      def read(conn)
        while true # not `loop`: no block frame and StopIteration rescue per request
          state = poll(conn)
          @budget.wait_for_room if state == :complete && @budget.over?
          return state unless state == :incomplete

          @deadlines.renew(conn)
          conn.wait_for_client
        end
      end

      # #read after a response on a keep-alive connection. The client sends its
      # next request only once it has read this response, so a read tried at
      # once finds nothing; and a wait on the socket costs two epoll_ctl calls
      # (io-event adds the socket for the wait, and removes it once the fiber
      # waits on something else, such as its database). So the fiber first
      # lets the loop's other fibers run, and reads after them: on a busy loop
      # the next request has arrived by then, and is read without a wait.
      # Pipelined bytes already buffered are parsed at once.
      def read_next(conn)
        Fiber.scheduler.yield unless conn.buffered?
        read(conn)
      end

      # Parses what has already arrived, without waiting: :complete,
      # :incomplete (more is to come), :closed, or :refused (answered with an
      # error status and still open: the caller retires it, lingering, since
      # the rest of the request may be on its way; see LingeringClose).
      def poll(conn)
        return :complete if conn.buffered? && conn.advance == :complete

        while true # not `loop`: no block frame and StopIteration rescue per request
          case conn.read_nonblock
          when :data then return :complete if conn.advance == :complete
          when :wait then return :incomplete
          when :eof then return close(conn, :client_closed)
          end
        end
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        :refused
      rescue HTTP::ProxyHeader::Error => e
        @handler.refuse_proxy_header(conn, e) # no HTTP answer: the peer speaks no PROXY
        close(conn, :bad_proxy_header)
      end

      private

      def close(conn, reason)
        @connections.close(conn, reason)
        :closed
      end
    end
  end
end
