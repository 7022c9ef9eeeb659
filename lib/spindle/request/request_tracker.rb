# frozen_string_literal: true

require_relative "../metrics/duration_histogram"

module Spindle
  # Counts requests for stats and heartbeats: how many served, how many in
  # flight, and how long the oldest in-flight one has run (how the cluster finds
  # a request that hangs), and how long the finished ones took
  # (Metrics::DurationHistogram: from the app call to the response written;
  # kept only with --metrics, the one reader of it), how long requests
  # waited before their app call (RequestPath::QueueTiming) and how many
  # were shed for it (RequestPath::QueueShedding), also for --metrics. One
  # per process.
  #
  # Requests start and finish on the serving threads; the counts are read
  # from others (a worker's check-in, the stats endpoint). Several serving
  # threads (threads, hybrid) take a lock to count. One serving thread
  # (blocking, fibers: one_thread) takes none: the two Mutex#synchronize
  # per request were a measurable share of a hello request's instructions
  # (PERFORMANCE.md, "The figures behind lib/'s comments").
  # Readers take no lock in either case: each reads in one call that holds
  # the GVL throughout (Hash#size, #keys, #values, Array#dup), never
  # iterating while a serving thread may insert.
  class RequestTracker
    attr_reader :served

    def initialize(durations: true, one_thread: false)
      @mutex = Thread::Mutex.new unless one_thread
      @started = {}.compare_by_identity # connection => when its current request began (no #hash call per request)
      @served = 0
      @durations = Metrics::DurationHistogram.new if durations
      @queue_times = Metrics::DurationHistogram.new if durations
      @shed = 0
    end

    # Requests answered 503 for their queue time (RequestPath::QueueShedding).
    attr_reader :shed

    def start(conn)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return @started[conn] = now unless @mutex

      @mutex.synchronize { @started[conn] = now }
    end

    # The clock is read only when durations are kept: once per request saved.
    def finish(conn)
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC) if @durations
      return count_finished(conn, now) unless @mutex

      @mutex.synchronize { count_finished(conn, now) }
    end

    # A request waited seconds before its app call (RequestPath::QueueTiming).
    def queued(seconds)
      return unless @queue_times
      return @queue_times.observe(seconds) unless @mutex

      @mutex.synchronize { @queue_times.observe(seconds) }
    end

    def shed!
      return @shed += 1 unless @mutex

      @mutex.synchronize { @shed += 1 }
    end

    # The queue times observed so far, as #durations.
    def queue_times = @queue_times&.snapshot || Metrics::DurationHistogram::Snapshot.empty

    # A Metrics::DurationHistogram::Snapshot of the requests finished so far.
    # Taken while a request finishes, its sum may lack that request's
    # duration while its counts have it; the next snapshot has both.
    def durations = @durations&.snapshot || Metrics::DurationHistogram::Snapshot.empty

    def in_flight = @started.size

    # The connections whose request is in flight (a forced stop logs them).
    def in_flight_connections = @started.keys

    # [connection, seconds its request has run] for each request in flight
    # (a thread dump lists them). Hash#to_a copies in one call.
    def in_flight_ages
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @started.to_a.map { |conn, started| [conn, now - started] }
    end

    # Seconds the oldest in-flight request has run; 0 when none is.
    def oldest_age
      oldest = @started.values.min
      oldest ? Process.clock_gettime(Process::CLOCK_MONOTONIC) - oldest : 0
    end

    private

    def count_finished(conn, now)
      started = @started.delete(conn)
      @served += 1
      @durations.observe(now - started) if started && now
    end
  end
end
