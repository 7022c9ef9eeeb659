# frozen_string_literal: true

require_relative "../http/response_writer"

module Spindle
  class RequestPath
    # --access-log: one step in two stages. In the app stage, before the app
    # (and after ForwardedHeaders), it notes what the client asked for and
    # when: middleware may rewrite PATH_INFO or REQUEST_METHOD
    # (Rack::MethodOverride), and the line says what the client sent. In the
    # response stage, first, it writes the line once the response is out,
    # with what the client got (Log::AccessLog words it).
    #
    # What it noted waits in the env under NOTED, as the writer's count of
    # body bytes does (HTTP::ResponseWriter::BODY_BYTES): the step is one
    # object for every request and thread, and keeps nothing of its own.
    class AccessLogging
      NOTED = "spindle.access_log" # [when the app was called, Log::AccessLog#capture]
      BODY_BYTES = HTTP::ResponseWriter::BODY_BYTES

      def initialize(access_log, app, response)
        @access_log = access_log
        @app = app
        @response = response
      end

      def call(env)
        env[NOTED] = [Process.clock_gettime(Process::CLOCK_MONOTONIC), @access_log.capture(env)]
        @app.call(env)
      end

      # A :failed response: the writer's 500 went out in place of what the
      # app returned, and that is what the line says.
      def respond(conn, env, status, headers, body, keep_alive)
        outcome = @response.respond(conn, env, status, headers, body, keep_alive)
        failed = outcome == :failed
        record(env, failed ? 500 : status, headers, failed ? ERROR_BODY.bytesize : env[BODY_BYTES])
        outcome
      end

      private

      # headers: the app's, whose x-request-id names the request when the
      # client sent none (RequestName).
      def record(env, status, headers, bytes)
        started, request = env[NOTED]
        seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started if started
        @access_log.record(env, request, status, bytes, seconds, headers)
      end
    end
  end
end
