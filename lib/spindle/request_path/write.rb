# frozen_string_literal: true

require_relative "../engine/outbox"
require_relative "../http/response_writer"
require_relative "../request/request_name"

module Spindle
  class RequestPath
    # The response stage's last step: the writer, and what a response that
    # cannot be written becomes. Returns the outcome the engine acts on:
    # :keep_alive, :close, :hijacked (the app took the socket: nothing to
    # write), or :failed (the response failed before any of it was sent, and
    # a 500 went out in its place; the connection closes).
    class Write
      def initialize(writer, log)
        @writer = writer
        @log = log
      end

      def respond(conn, env, status, headers, body, keep_alive)
        return :hijacked if conn.hijacked?

        @writer.write(conn, env, status, headers, body, keep_alive)
      rescue *Engine::Outbox::CLIENT_GONE # nobody to tell
        :close
      rescue HTTP::InvalidResponse => e
        # The app's mistake, not the server's: what it returned and what Rack
        # requires, without the writer's backtrace, which would point at Spindle.
        @log.error("app returned an invalid response to #{RequestName.for_log(env, headers)}: #{e.message}")
        fail_response(conn)
      rescue StandardError => e
        @log.exception(e, "response to #{RequestName.for_log(env, headers)} could not be written")
        fail_response(conn)
      end

      private

      # After a failed response: a 500 if nothing was sent yet (:failed), else
      # :close; either way the connection closes, since the client cannot tell
      # where this response ends.
      def fail_response(conn)
        return :close if conn.response_started?

        @writer.write_simple(conn, 500, ERROR_BODY)
        :failed
      rescue StandardError
        :close
      end
    end
  end
end
