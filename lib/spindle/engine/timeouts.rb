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
    end
  end
end
