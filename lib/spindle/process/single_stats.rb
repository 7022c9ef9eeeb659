# frozen_string_literal: true

require "time"
require_relative "../ops/process_stats"

module Spindle
  # The stats of a process serving alone (no -w), in the shape of a
  # cluster's (Cluster::StatsReport), so spindlectl, scripts and --metrics
  # read both alike: "master" describes the process in charge (this one,
  # with no workers wanted), "workers" holds this same process as worker 0.
  # Read from the handler's RequestTracker (thread-safe), the engine's
  # backlog and /proc, from any thread, never through the engine.
  class SingleStats
    # log: the process's Log, whose dropped lines are reported; sidecars:
    # its SingleSidecars, or nil.
    def initialize(config, server, log, started_at: Time.now, sidecars: nil)
      @sidecars = sidecars
      @config = config
      @server = server
      @log = log
      @started_at = started_at
    end

    def to_h(durations: false)
      worker = worker(durations: durations)
      memory = worker["memory"] || {}
      { "mode" => "single", "master" => master,
        "totals" => { "workers" => 1, "requests" => worker["requests"], "in_flight" => worker["in_flight"],
                      "rss" => memory[:rss].to_i, "pss" => memory[:pss].to_i, "uss" => memory[:uss].to_i },
        "workers" => [worker], "mold" => nil, "sidecars" => @sidecars ? @sidecars.report : [] }
    end

    # This process as a cluster would show one of its workers.
    def worker(durations: false)
      tracker = @server.handler.tracker
      entry = { "index" => 0, "pid" => Process.pid, "state" => "serving", "generation" => 0,
                "booted_at" => @started_at.utc.iso8601, "requests" => tracker.served,
                "in_flight" => tracker.in_flight, "backlog" => @server.backlog,
                "oldest_request_age" => tracker.oldest_age.round(3), "memory" => ProcessStats.memory,
                "gc" => ProcessStats.gc, "restarts" => 0,
                "log_lines_dropped" => @log.dropped_lines }
      entry.update(figures(tracker)) if durations
      entry
    end

    private

    # What --metrics reports beside the stats (Metrics::Report).
    def figures(tracker)
      { "durations" => tracker.durations, "queue_times" => tracker.queue_times, "shed" => tracker.shed }
    end

    def master
      { "pid" => Process.pid, "started_at" => @started_at.utc.iso8601, "generation" => 0, "refork_failures" => 0,
        "workers_desired" => 0, "engine" => @config.engine, "allocator" => ProcessStats.allocator,
        "malloc_arena_max" => ENV["MALLOC_ARENA_MAX"], "malloc_conf" => ENV["MALLOC_CONF"],
        "memory" => ProcessStats.memory }
    end
  end
end
