# frozen_string_literal: true

require "time"
require_relative "../ops/process_stats"

module Spindle
  module Cluster
    # The cluster's stats as a Hash for JSON: one entry per worker (and the mold)
    # and totals. Built on the master's thread, from the workers' last check-ins
    # and /proc. docs/STATS.md documents every field.
    class StatsReport
      WORKER_STATES = %w[booting serving retiring killed].freeze

      def initialize(master, config)
        @master = master
        @config = config
      end

      # durations: each worker's request-duration and queue-time
      # histograms and shed count too (for --metrics; left out of
      # spindlectl's JSON).
      def to_h(durations: false)
        children = @master.children.map { |c| child(c, durations) }
        workers = children.select { |c| WORKER_STATES.include?(c["state"]) }
        molds = children.select { |c| c["state"].start_with?("mold") }
        { "mode" => "cluster", "master" => master_entry, "totals" => totals(workers, children), "workers" => workers,
          "mold" => molds.find { |c| c["state"] == "mold" } || molds.first, "sidecars" => @master.sidecars.report }
      end

      private

      def master_entry
        { "pid" => Process.pid, "started_at" => @master.started_at.utc.iso8601, "generation" => @master.generation,
          "refork_failures" => @master.refork_failures, "refork" => @master.reforker.report,
          "workers_desired" => @master.desired, "engine" => @config.engine,
          "allocator" => ProcessStats.allocator, "malloc_arena_max" => ENV["MALLOC_ARENA_MAX"],
          "malloc_conf" => ENV["MALLOC_CONF"],
          "memory" => ProcessStats.memory }
      end

      def child(c, durations)
        checkin = c.checkin
        { "index" => c.index, "pid" => c.pid, "state" => c.state.to_s, "generation" => c.generation,
          "booted_at" => c.booted_at&.utc&.iso8601, "requests" => checkin&.requests.to_i,
          "memory" => c.pid && ProcessStats.memory(c.pid), "gc" => checkin&.gc,
          "log_lines_dropped" => checkin&.log_lines_dropped || {},
          "restarts" => @master.restarts.fetch(c.index, 0) }.merge(activity(c, checkin)).tap do |entry|
          entry.update(figures(checkin)) if durations
        end
      end

      # What --metrics reports beside the stats (Metrics::Report); nil
      # before the worker's first check-in.
      def figures(checkin)
        { "durations" => checkin&.durations, "queue_times" => checkin&.queue_times, "shed" => checkin&.shed }
      end

      # A mold serves nothing and does not check in: its last check-in, as a
      # worker, would show requests long finished and an age that grows past
      # --worker-timeout as if it were stuck. A worker becoming the mold still
      # drains and checks in: its figures are live.
      def activity(c, checkin)
        return { "in_flight" => 0, "backlog" => 0, "last_checkin_age" => nil, "oldest_request_age" => 0.0 } if
          c.mold? && c.state != :mold_pending

        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        { "in_flight" => checkin&.in_flight.to_i, "backlog" => checkin&.backlog.to_i,
          "last_checkin_age" => (now - c.last_checkin).round(3),
          "oldest_request_age" => checkin&.oldest_request_age.to_f.round(3) }
      end

      def totals(workers, children)
        memory = children.filter_map { |c| c["memory"] }
        { "workers" => workers.size, "requests" => workers.sum { |w| w["requests"] },
          "in_flight" => workers.sum { |w| w["in_flight"] },
          "rss" => memory.sum { |m| m[:rss].to_i }, "pss" => memory.sum { |m| m[:pss].to_i },
          "uss" => memory.sum { |m| m[:uss].to_i } }
      end
    end
  end
end
