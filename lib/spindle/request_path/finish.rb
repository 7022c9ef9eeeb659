# frozen_string_literal: true

require_relative "../request/request_name"

module Spindle
  class RequestPath
    # The finish stage's last step, once the response is out (or failed, or
    # the connection was hijacked): the body is closed, the
    # rack.response_finished callbacks run, rack.input is let go and the
    # request is counted as finished. Runs in Handler#serve's ensure, so
    # env may be nil (the request's env could not be finished) and status,
    # headers, body nil (the app never returned).
    class Finish
      RESPONSE_FINISHED = "rack.response_finished"

      def initialize(log, tracker)
        @log = log
        @tracker = tracker
      end

      # error: what the app raised, nil when it returned.
      def finish(conn, env, status, headers, body, error)
        close_body(env, headers, body)
        response_finished(env, status, headers, error) if env && !env[RESPONSE_FINISHED]&.empty?
        conn.release_input # after the body and the callbacks, which may still read rack.input
        @tracker.finish(conn)
      end

      private

      def close_body(env, headers, body)
        body.close if body.respond_to?(:close)
      rescue StandardError => e
        @log.exception(e, "body.close raised, for #{RequestName.for_log(env, headers)}")
      end

      # Rack SPEC: the callbacks run in reverse order of registration, like
      # ensure blocks: middleware that registered first is told last.
      def response_finished(env, status, headers, error)
        env[RESPONSE_FINISHED]&.reverse_each do |callback|
          callback.call(env, status, headers, error)
        rescue StandardError => e
          @log.exception(e, "rack.response_finished callback raised, for #{RequestName.for_log(env, headers)}")
        end
      end
    end
  end
end
