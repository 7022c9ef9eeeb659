# frozen_string_literal: true

module Spindle
  class RequestPath
    # Response stage, in a cluster worker: when the worker holds more
    # clients than its share (Engine::Rebalancer asks, Handler#shed_one!),
    # the next responses that would keep their connection close it instead,
    # one per ask, so their clients reconnect to a sibling with fewer.
    #
    # The count is changed from the Rebalancer's thread and from the serving
    # threads without a lock: another thread may take the last close first,
    # and then this response keeps its connection (#take never goes below 0).
    class Shedding
      def initialize(response)
        @response = response
        @shed = 0 # connections to close after their next response
      end

      def shed_one! = @shed += 1

      def shedding? = @shed.positive?

      def respond(conn, env, status, headers, body, keep_alive)
        keep_alive = false if keep_alive && @shed.positive? && !conn.hijacked? && take
        @response.respond(conn, env, status, headers, body, keep_alive)
      end

      private

      def take
        return false unless @shed.positive?

        @shed -= 1
        true
      end
    end
  end
end
