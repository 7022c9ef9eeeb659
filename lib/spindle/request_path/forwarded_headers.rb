# frozen_string_literal: true

require_relative "../http/forwarded"

module Spindle
  class RequestPath
    # App stage, first step (--trusted-proxies): the X-Forwarded-* fields of
    # a trusted peer set the client's address, scheme and host
    # (HTTP::Forwarded says which and why) before anything else reads them:
    # the access log records the client they name.
    #
    #   spindle.proxied   true when the request came from a trusted proxy
    #                     (absent otherwise): QueueShedding keeps such a
    #                     connection open, the app may read it too
    class ForwardedHeaders
      PROXIED = "spindle.proxied"

      # networks: the trusted IPAddr networks (Config's trusted_proxies).
      def initialize(app, networks)
        @app = app
        @forwarded = HTTP::Forwarded.new(networks)
      end

      def call(env)
        env[PROXIED] = true if @forwarded.apply(env)
        @app.call(env)
      end
    end
  end
end
