# frozen_string_literal: true

require_relative "metrics/duration_histogram"

module Spindle
  # Counts requests for stats and heartbeats: how many served, how many in
  # flight, and how long the oldest in-flight one has run (how the cluster finds
  # a request that hangs), and how long the finished ones took
  # (Metrics::DurationHistogram: from the app call to the response written;
  # kept only with --metrics, the one reader of it). Thread-safe; one per process.
  class RequestTracker
    attr_reader :served

    def initialize(durations: true)
      @mutex = Thread::Mutex.new
      @started = {}.compare_by_identity # connection => when its current request began (no #hash call per request)
      @served = 0
      @durations = Metrics::DurationHistogram.new if durations
    end

    def start(conn)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @mutex.synchronize { @started[conn] = now }
    end

    # The clock is read only when durations are kept: once per request saved.
    def finish(conn)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC) if @durations
      @mutex.synchronize do
        started = @started.delete(conn)
        @served += 1
        @durations.observe(now - started) if started && now
      end
    end

    # A Metrics::DurationHistogram::Snapshot of the requests finished so far.
    def durations
      @mutex.synchronize { @durations&.snapshot } || Metrics::DurationHistogram::Snapshot.empty
    end

    def in_flight = @mutex.synchronize { @started.size }

    # The connections whose request is in flight (a forced stop logs them).
    def in_flight_connections = @mutex.synchronize { @started.keys }

    # Seconds the oldest in-flight request has run; 0 when none is.
    def oldest_age
      oldest = @mutex.synchronize { @started.each_value.min }
      oldest ? Process.clock_gettime(Process::CLOCK_MONOTONIC) - oldest : 0
    end
  end
end
