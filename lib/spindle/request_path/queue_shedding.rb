# frozen_string_literal: true

require_relative "queue_timing"
require_relative "forwarded_headers"
require_relative "../log/throttle"

module Spindle
  class RequestPath
    # App stage (--max-queue-time): a request that has already waited longer
    # (QueueTiming's figure) is answered 503 without calling the app. Its
    # client gave up long ago, or is about to: an app call now would spend a
    # worker on an answer nobody reads, while the requests behind it wait
    # longer still. Shedding the stale ones lets the fresh ones through in
    # time (docs/QUEUE_TIME.md).
    #
    # After Health, so a health check is never shed (a host shedding under
    # load is still alive, and taking it out of the pool would load the
    # others more); before Static and the app. The 503 says Retry-After: 1
    # and closes its connection: a client that retries may land on a less
    # busy worker or host. Counted in the metrics, and logged at most once
    # per LOG_EVERY seconds with the count since.
    class QueueShedding
      LOG_EVERY = 1
      RETRY_AFTER = "1"
      BODY = "Service Unavailable: the request waited too long to be served\n"

      def initialize(app, max, tracker, log)
        @app = app
        @max = max
        @tracker = tracker
        @log = Log::Throttle.new(log, LOG_EVERY)
      end

      def call(env)
        wait = env[QueueTiming::TIME]
        return @app.call(env) unless wait > @max

        shed(wait, env.key?(ForwardedHeaders::PROXIED))
      end

      private

      def shed(wait, proxied)
        @tracker.shed!
        @log.warn(format("shed a request that waited %.3fs, past --max-queue-time %gs: 503", wait, @max))
        # Fresh headers each time: the writer and the callbacks may keep them.
        headers = { "content-type" => "text/plain", "retry-after" => RETRY_AFTER, "cache-control" => "no-store" }
        headers["connection"] = "close" unless proxied
        [503, headers, [BODY]]
      end
    end
  end
end
