# frozen_string_literal: true

module Spindle
  class RequestPath
    # Finish stage (--oob-gc N): a full GC after every Nth request, once its
    # response is out and no other request is in flight, so no client waits
    # on the collection.
    class OobGc
      def initialize(finish, tracker, every)
        @finish = finish
        @tracker = tracker
        @every = every
      end

      def finish(conn, env, status, headers, body, error)
        @finish.finish(conn, env, status, headers, body, error) # counts this request as finished
        GC.start if (@tracker.served % @every).zero? && @tracker.in_flight.zero?
      end
    end
  end
end
