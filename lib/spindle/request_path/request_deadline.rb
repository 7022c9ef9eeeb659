# frozen_string_literal: true

require_relative "../request/deadline"
require_relative "../request/request_name"

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
    # ends here as that 503. The app may have turned it into an error of its
    # own on its way out (a library that wraps what it rescues): once the
    # deadline passed, any StandardError is taken for the timeout too.
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
        rescue RequestTimeout, StandardError
          raise unless deadline.raised?
        ensure
          deadline.finish # never watched again, whatever the app did
        end
        deadline.late? ? timed_out(env, deadline, response) : response
      end

      private

      # A call the watch did not see pass (a fiber engine's loop held by the
      # call itself, or a deadline passed within the watch's interval) is
      # logged here.
      def timed_out(env, deadline, response)
        close_body(env, response)
        unless deadline.passed?
          ran = Deadline.now - deadline.started_at
          @log.warn("request timeout: #{RequestName.for_log(env)} returned after #{format('%.2f', ran)}s, past " \
                    "its deadline; answered #{STATUS}")
        end
        [STATUS, { "content-type" => "text/plain" }, [BODY]]
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
