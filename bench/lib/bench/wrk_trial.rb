# frozen_string_literal: true

require "etc"
require_relative "wrk"
require_relative "bottleneck"
require_relative "paths"

module Bench
  # The default measurement: against a started, ready server, a warm-up wrk
  # run at the highest connection count (discarded), then one wrk run per
  # connection count. Each result carries its CPU usage and the
  # load-generator verdict. Every other trial starts from this one: it gets
  # the server, the settings and the scenario, and #wrk and #record.
  class WrkTrial
    def initialize(server:, settings:, scenario:)
      @server = server
      @settings = settings
      @scenario = scenario
    end

    def warm_up(connections) = wrk(warm_up_connections(connections.max), @settings.warmup).run

    # Rails opens a pooled database connection only when a request in flight
    # needs one, and wrk's connections split unevenly over the processes
    # (at c=16 over 2 workers: 8/8 in the warm-up, 10/6 in the next run). A
    # process that got more than it had warmed for opened its extra
    # connections inside the measured run: 0.4-1.2 s each under hybrid on
    # Ruby 3.3, the requests behind them 1.2-2.4 s, and with wrk's
    # correction for coordinated omission a p99 of 400-670 ms. So with
    # several processes a warm_pools scenario warms up at 1.5x the run's
    # highest count for each process (48 at c=16 over 2), enough that each
    # is likely to have had that many requests in flight at once.
    def warm_up_connections(max)
      processes = @server.launch.processes
      @scenario.warm_pools && processes > 1 ? (max * processes * 1.5).ceil : max
    end

    def measure(connections) = record(wrk(connections, @settings.duration).run, connections)

    # A wrk run's record, the shape Bench::Summary and the pages read: wrk's
    # figures in ms, its errors, the CPU usage and the load-generator verdict,
    # and whatever else the Lua script reported (paced.lua's late sends).
    def self.record(run, connections:, processes:, wrk_threads:)
      r = run.result
      seconds = r[:duration_us] / 1e6
      verdict = Bottleneck.judge(run.usage, wrk_threads: [wrk_threads, connections].min, processes: processes)
      {
        connections: connections, requests_per_sec: (r[:requests] / seconds).round(1),
        requests: r[:requests], seconds: seconds.round(3),
        latency_ms: %i[p50 p90 p99 p999 max mean].to_h { |k| [k, (r[:"#{k}_us"] / 1000.0).round(3)] },
        errors: { connect: r[:connect_errors], read: r[:read_errors], write: r[:write_errors], timeout: r[:timeouts] },
        bad_status: r[:status_errors], # responses with status >= 400, as wrk counts them
        cpu: run.usage&.to_h, verdict: verdict.to_h, load_generator_bound: verdict.bound,
        wrk: command_line(run.argv)
      }.merge(r.reject { |k, _| k == :bytes || k.end_with?("_us", "_errors") || %i[requests timeouts].include?(k) })
    end

    # wrk's argv for the report: paths relative to the repository, no port.
    def self.command_line(argv)
      argv.map { |a| a.start_with?(Paths::BENCH) ? Paths.relative(a) : a }.join(" ").sub(/127\.0\.0\.1:\d+/, "127.0.0.1:PORT")
    end

    private

    # options: path (instead of the scenario's), threads, script, script_args.
    def wrk(connections, duration, path: @scenario.path, **options)
      Wrk.new(server_pid: @server.pgid, url: @server.launch.url(path), connections: connections, duration: duration,
              threads: @settings.wrk_threads, timeout: @settings.wrk_timeout, **options)
    end

    def record(run, connections, wrk_threads: @settings.wrk_threads)
      self.class.record(run, connections: connections, processes: @server.launch.processes, wrk_threads: wrk_threads)
    end
  end
end
