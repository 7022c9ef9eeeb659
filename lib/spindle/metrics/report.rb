# frozen_string_literal: true

require "time"
require_relative "exposition"
require_relative "duration_histogram"

module Spindle
  module Metrics
    # Turns what `spindlectl stats` knows (Cluster::StatsReport's Hash, with
    # each worker's restarts and durations; or SingleSource's, for a process
    # serving alone) into the exposition docs/METRICS.md lists. Runs on the
    # endpoint's thread, never on the master loop's.
    #
    # Per-worker series carry worker="INDEX". During a phased restart or a
    # refork a slot briefly has two processes (the one retiring and its
    # replacement); a series must name one, so the replacement is reported,
    # and the counters of the slot start again from zero, which Prometheus's
    # rate() reads as a counter reset.
    class Report
      WORKER_STATES = %w[booting serving retiring killed].freeze
      MEMORY = { rss: "Resident memory, shared pages counted in full",
                 pss: "Proportional memory: shared pages divided among the processes sharing them (sums to the real total)",
                 uss: "Private memory, shared with no other process (what exiting frees)" }.freeze

      PER_WORKER = [
        ["spindle_requests_total", "counter", "Requests the worker has completed since it started.",
         ->(w) { w["requests"] }],
        ["spindle_requests_in_flight", "gauge", "Requests the worker is running now.", ->(w) { w["in_flight"] }],
        ["spindle_requests_backlog", "gauge",
         "Complete requests waiting for the app: for a pool thread (threads), at the --app-concurrency gate " \
         "(fibers, hybrid); 0 where none wait.", ->(w) { w["backlog"] }],
        ["spindle_oldest_request_age_seconds", "gauge",
         "How long the worker's oldest in-flight request has run; 0 when none is.", ->(w) { w["oldest_request_age"] }],
        ["spindle_worker_last_checkin_age_seconds", "gauge",
         "Seconds since the worker last checked in with the master (every second while it is healthy).",
         ->(w) { w["last_checkin_age"] }],
        *MEMORY.map do |key, help|
          ["spindle_worker_#{key}_bytes", "gauge", "#{help}, in bytes.", ->(w) { w["memory"]&.fetch(key, nil) }]
        end,
        ["spindle_worker_heap_live_slots", "gauge", "Live object slots in the worker's Ruby heap.",
         ->(w) { w["gc"]&.fetch(:heap_live_slots, nil) }],
        ["spindle_worker_restarts_total", "counter",
         "Worker processes started in this slot after its first (crash, timeout kill, memory recycle, phased restart, refork).",
         ->(w) { w["restarts"] }],
        ["spindle_worker_generation", "gauge", "The worker's generation: 0 forked from the master, g from generation g's mold.",
         ->(w) { w["generation"] }],
        ["spindle_worker_start_time_seconds", "gauge", "When the worker started serving, in seconds since the Unix epoch.",
         ->(w) { epoch(w["booted_at"]) }],
      ].freeze

      def self.epoch(iso8601) = iso8601 && Time.iso8601(iso8601).to_f

      # stats: a Hash with "workers" (and, in a cluster, "master" and "mold").
      def initialize(stats)
        @stats = stats
        @workers = one_per_slot(stats["workers"])
      end

      def to_s
        out = Exposition.new
        master(out) if @stats["master"]
        workers(out)
        out.to_s
      end

      private

      def one_per_slot(workers)
        workers.group_by { |w| w["index"] }.sort.map do |_, same_slot|
          same_slot.min_by { |w| [%w[serving booting].include?(w["state"]) ? 0 : 1, -w["generation"].to_i] }
        end
      end

      def workers(out)
        PER_WORKER.each do |name, type, help, value|
          out.family(name, type, help, @workers.map { |w| [label(w), value.call(w)] })
        end
        out.family("spindle_worker_gc_runs_total", "counter", "Garbage collections the worker's Ruby has run, by kind.",
                   @workers.flat_map { |w| gc_runs(w) })
        out.family("spindle_log_lines_dropped_total", "counter",
                   "Log lines the worker could not write (a full disk, a closed pipe), by log (server, access).",
                   @workers.flat_map { |w| dropped_lines(w) })
        out.histogram("spindle_request_duration_seconds",
                      "Time from the app call to the response written, of the requests the worker completed.",
                      @workers.map { |w| [label(w), w["durations"] || DurationHistogram::Snapshot.empty] })
        queue(out)
      end

      # Queue time (docs/QUEUE_TIME.md): how long requests waited before
      # their app call, and how many were shed for it (--max-queue-time).
      def queue(out)
        out.histogram("spindle_request_queue_time_seconds",
                      "Time from the request's first byte (or a trusted proxy's X-Request-Start, when earlier) " \
                      "to its app call.",
                      @workers.map { |w| [label(w), w["queue_times"] || DurationHistogram::Snapshot.empty] })
        out.family("spindle_requests_shed_total", "counter",
                   "Requests answered 503 without calling the app, by reason (queue_time: --max-queue-time).",
                   @workers.map { |w| [label(w).merge("reason" => "queue_time"), w["shed"] || 0] })
      end

      def gc_runs(worker)
        gc = worker["gc"] or return []
        %i[minor major].map { |kind| [label(worker).merge("kind" => kind.to_s), gc[kind]] }
      end

      # A series per log the worker writes: "server", and "access" with --access-log.
      def dropped_lines(worker)
        (worker["log_lines_dropped"] || {}).map { |log, count| [label(worker).merge("log" => log), count] }
      end

      def label(worker) = { "worker" => worker["index"] }

      def master(out)
        master = @stats["master"]
        counts = @stats["workers"].map { |w| w["state"] }.tally
        out.family("spindle_workers", "gauge", "Worker processes, by state.",
                   WORKER_STATES.map { |state| [{ "state" => state }, counts.fetch(state, 0)] })
        out.family("spindle_workers_desired", "gauge", "Workers the master keeps (-w, changed by TTIN/TTOU).",
                   [[{}, master["workers_desired"]]])
        out.family("spindle_generation", "gauge", "The newest worker generation (0 until the first refork).",
                   [[{}, master["generation"]]])
        out.family("spindle_refork_failures_total", "counter",
                   "Reforks that failed: the worker becoming the mold died or missed --worker-timeout, or the new generation's first worker did not boot.",
                   [[{}, master["refork_failures"]]])
        out.family("spindle_master_start_time_seconds", "gauge", "When this master started, in seconds since the Unix epoch.",
                   [[{}, self.class.epoch(master["started_at"])]])
        process_memory(out, "master", master["memory"])
        process_memory(out, "mold", @stats["mold"]&.fetch("memory", nil))
      end

      def process_memory(out, role, memory)
        MEMORY.each do |key, help|
          out.family("spindle_#{role}_#{key}_bytes", "gauge", "#{help}, in bytes, of the #{role}.",
                     [[{}, memory&.fetch(key, nil)]])
        end
      end
    end
  end
end
