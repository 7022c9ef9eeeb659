# frozen_string_literal: true

module Spindle
  module HTTP
    # rack.early_hints for one connection: env["rack.early_hints"].call(headers)
    # sends a 103 ahead of the response. One per connection, not per request.
    class EarlyHints
      def initialize(conn, writer)
        @conn = conn
        @writer = writer
      end

      def call(headers)
        @writer.write_early_hints(@conn, @conn.current_env, headers)
      end
    end
  end
end
