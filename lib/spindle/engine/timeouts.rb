# frozen_string_literal: true

module Spindle
  module Engine
    # Closes connections that missed their deadline: silently when they were idle
    # between requests, with a 408 when a request was under way.
    module Timeouts
      REQUEST_TIMEOUT = 408
      TIMEOUT_TEXT = "request timed out\n"

      module_function

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      def expire(conn, handler)
        if conn.timed_out_mid_request?
          handler.writer.write_simple(conn, REQUEST_TIMEOUT, TIMEOUT_TEXT)
        end
      rescue *Handler::CLIENT_GONE
        nil
      ensure
        conn.close
      end

      # Fiber engines: stops the fiber serving conn at its wait, then expires
      # conn. The expiry is in an ensure because stopping that fiber runs
      # others, and the caller may be stopped before control comes back: when
      # the connection was the loop's last, its end lets a drain finish, and
      # the drain stops the sweeper (or acceptor) that called this. The socket
      # then stayed open, and the client saw no close until the process exited.
      def stop_and_expire(conn, task, handler)
        task.stop # raises Async::Stop at its wait; its fiber forgets the connection
      ensure
        expire(conn, handler)
      end
    end
  end
end
