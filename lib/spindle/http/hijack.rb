# frozen_string_literal: true

module Spindle
  module HTTP
    # rack.hijack for one connection: env["rack.hijack"].call hands the app
    # the socket (Connection#hand_over), after what the server still had to
    # send. One per connection, not per request.
    class Hijack
      def initialize(conn)
        @conn = conn
      end

      def call = @conn.hand_over
    end
  end
end
