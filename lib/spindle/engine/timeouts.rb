# frozen_string_literal: true

require_relative "deadlines"

module Spindle
  module Engine
    # Closes connections that missed their deadline (Deadlines#expired?):
    # silently when they were idle between requests or owed a response, with
    # a 408 when a request was under way.
    module Timeouts
      REQUEST_TIMEOUT = 408
      TIMEOUT_TEXT = "request timed out\n"

      module_function

      def now = Deadlines.now

      # writer: the HTTP::ResponseWriter that words the 408.
      def expire(conn, writer)
        writer.write_simple(conn, REQUEST_TIMEOUT, TIMEOUT_TEXT) if mid_request?(conn)
      rescue *Handler::CLIENT_GONE
        nil
      ensure
        conn.close
      end

      # What a timed-out client is told: nothing when it was idle, or when
      # part of a response is still on its way to it; 408 otherwise.
      # A connection still owing its PROXY header has sent no HTTP: it is
      # closed without an answer.
      def mid_request?(conn) = !conn.idle? && !conn.outbox.pending? && !conn.awaiting_proxy_header?

      # Fiber engines: stops the fiber serving conn at its wait, then expires
      # conn. The expiry is in an ensure because stopping that fiber runs
      # others, and the caller may be stopped before control comes back: when
      # the connection was the loop's last, its end lets a drain finish, and
      # the drain stops the sweeper (or acceptor) that called this. The socket
      # then stayed open, and the client saw no close until the process exited.
      def stop_and_expire(conn, task, writer)
        task.stop # raises Async::Stop at its wait; its fiber forgets the connection
      ensure
        expire(conn, writer)
      end
    end
  end
end
