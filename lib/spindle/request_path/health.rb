# frozen_string_literal: true

require_relative "../request/health_check"

module Spindle
  class RequestPath
    # App stage (--health-path): the server answers its health path itself
    # (HealthCheck), 200 while the process serves and 503 from the moment a
    # stop begins (Phase#serving?); every other request goes on.
    class Health
      def initialize(app, check, phase)
        @app = app
        @check = check
        @phase = phase
      end

      def call(env)
        return @app.call(env) unless @check.asked?(env)

        @check.response(env, @phase.serving?)
      end
    end
  end
end
