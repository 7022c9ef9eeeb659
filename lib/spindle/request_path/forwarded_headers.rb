# frozen_string_literal: true

require_relative "../http/forwarded"

module Spindle
  class RequestPath
    # App stage, first step (--trusted-proxies): the X-Forwarded-* fields of
    # a trusted peer set the client's address, scheme and host
    # (HTTP::Forwarded says which and why) before anything else reads them:
    # the access log records the client they name.
    class ForwardedHeaders
      # networks: the trusted IPAddr networks (Config's trusted_proxies).
      def initialize(app, networks)
        @app = app
        @forwarded = HTTP::Forwarded.new(networks)
      end

      def call(env)
        @forwarded.apply(env)
        @app.call(env)
      end
    end
  end
end
