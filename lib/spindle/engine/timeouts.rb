# frozen_string_literal: true

require_relative "deadlines"
require_relative "outbox"

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

      # writer: the HTTP::ResponseWriter that words the 408; connections:
      # the loop's Connections, which closes conn. After a 408 the
      # client may still be sending its request, so the close lingers:
      # retire (the engine's: Selection#retire, FiberLoop#retire_apart) gets
      # conn once the 408 is written; without one it closes at once. A
      # connection that lingers already is closed: that was its deadline.
      def expire(conn, writer, connections, retire = nil)
        return connections.close(conn, :deadline) unless mid_request?(conn)

        conn.refused!
        writer.write_simple(conn, REQUEST_TIMEOUT, TIMEOUT_TEXT)
        retire ? retire.call(conn) : connections.close(conn, :refused)
      rescue *Outbox::CLIENT_GONE
        connections.close(conn, :write_failed)
      end

      # What a timed-out client is told: nothing when it was idle, or when
      # part of a response is still on its way to it; 408 otherwise.
      # A connection still owing its PROXY header has sent no HTTP: it is
      # closed without an answer; nor one that lingers: it was answered.
      def mid_request?(conn)
        !conn.idle? && !conn.outbox.pending? && !conn.awaiting_proxy_header? && !conn.lingering?
      end

      # Fiber engines: stops the fiber serving conn at its wait, then expires
      # conn. The expiry is in an ensure because stopping that fiber runs
      # others, and the caller may be stopped before control comes back: when
      # the connection was the loop's last, its end lets a drain finish, and
      # the drain stops the sweeper (or acceptor) that called this. The socket
      # then stayed open, and the client saw no close until the process exited.
      def stop_and_expire(conn, task, writer, connections, retire = nil)
        task.stop # raises Async::Stop at its wait; its fiber forgets the connection
      ensure
        expire(conn, writer, connections, retire)
      end

      # Fiber engines: stops the fiber serving conn at its wait, then closes
      # conn at once for reason; in an ensure, as #stop_and_expire.
      def stop_and_close(conn, task, connections, reason)
        task.stop
      ensure
        connections.close(conn, reason)
      end
    end
  end
end
