# frozen_string_literal: true

require_relative "../request/timed_connection"
require_relative "../request/queue_time"

module Spindle
  class RequestPath
    # App stage, first step (on when something reads the figure: --metrics,
    # --access-log or --max-queue-time; RequestPath#timed?): how long the
    # request waited before it got here (QueueTime), into the env for the
    # steps after it and the app, and into the metrics' histogram. First, so
    # the trusted peer is still the connection's (ForwardedHeaders comes
    # next and rewrites REMOTE_ADDR to the client).
    #
    #   spindle.queue_time   Float seconds waited, 0 or more
    #   spindle.queue_start  the monotonic time (CLOCK_MONOTONIC) it counts
    #                        from: the request's first byte, or the proxy's
    #                        stamp when that is earlier
    class QueueTiming
      TIME = "spindle.queue_time"
      START = TimedConnection::QUEUE_START

      # forwarded: the trusted proxies' HTTP::Forwarded, or nil.
      def initialize(app, tracker, forwarded)
        @app = app
        @tracker = tracker
        @queue_time = QueueTime.new(forwarded)
      end

      def call(env)
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        wait = @queue_time.measure(env, env[START], now)
        env[TIME] = wait
        env[START] = now - wait
        @tracker.queued(wait)
        @app.call(env)
      end
    end
  end
end
