# frozen_string_literal: true

require_relative "../request/deadline"
require_relative "../request/request_name"
require_relative "../log"

module Spindle
  class RequestPath
    # App stage, next to the app (--request-timeout): each request gets its
    # Deadline in env["spindle.deadline"] for the app's call, and the
    # engine's watch (Engine::RequestDeadlines) looks for those past it.
    # A call that ran late gets a 503 in place of what it returned, whatever
    # that was: nothing of the response is sent before the app returns, so
    # the client can always be told. The app's body is closed unsent.
    #
    # On the fiber engines the watch raised RequestTimeout into the call; it
    # ends here as that 503. An error out of a call past its deadline is
    # taken for the deadline's doing too: a library may wrap the
    # RequestTimeout it rescued, and a statement_timeout set from the
    # deadline ends the query with an error of its own (PG::QueryCanceled).
    # An error within the deadline is the app's: it goes on to the
    # Handler's 500.
    class RequestDeadline
      STATUS = 503
      BODY = "request timed out\n"

      def initialize(app, seconds, log)
        @app = app
        @seconds = seconds
        @log = log
      end

      def call(env)
        deadline = env[Deadline::ENV_KEY] = Deadline.new(@seconds)
        begin
          response = @app.call(env)
        rescue RequestTimeout, StandardError => e
          raise unless deadline.finish

          error = e
        ensure
          deadline.finish # never watched again, whatever the app did
        end
        deadline.late? ? timed_out(env, deadline, response, error) : response
      end

      private

      # A call the watch did not see pass (a fiber engine's loop held by the
      # call itself, or a deadline passed within the watch's interval) is
      # logged here.
      def timed_out(env, deadline, response, error)
        close_body(env, response)
        log_late(env, deadline, error) unless deadline.passed? && (error.nil? || error.is_a?(RequestTimeout))
        [STATUS, { "content-type" => "text/plain" }, [BODY]]
      end

      def log_late(env, deadline, error)
        ran = format("%.2f", Deadline.now - deadline.started_at)
        how = error ? "raised #{error.class} (#{Log.escape(error.message.to_s)})" : "returned"
        @log.warn("request timeout: #{RequestName.for_log(env)} #{how} after #{ran}s, past its deadline; " \
                  "answered #{STATUS}")
      end

      def close_body(env, response)
        body = response&.at(2)
        body.close if body.respond_to?(:close)
      rescue StandardError => e
        @log.exception(e, "body.close raised, for #{RequestName.for_log(env)}")
      end
    end
  end
end
