# frozen_string_literal: true

require "etc"
require_relative "wrk"
require_relative "bottleneck"

module Bench
  # The default measurement: against a started, ready server, a warm-up wrk
  # run at the highest connection count (discarded), then one wrk run per
  # connection count. Each result carries its CPU usage and the
  # load-generator verdict.
  class WrkTrial
    def initialize(server:, settings:, scenario:)
      @server = server
      @settings = settings
      @scenario = scenario
    end

    def warm_up(connections)
      wrk(connections.max, @settings.warmup).run
    end

    def measure(connections)
      run = wrk(connections, @settings.duration).run
      verdict = Bottleneck.judge(run.usage, wrk_threads: threads_for(connections),
                                            processes: @server.launch.processes)
      to_record(run, verdict, connections)
    end

    private

    def wrk(connections, duration)
      Wrk.new(server_pid: @server.pgid, url: @server.launch.url, connections: connections,
              duration: duration, threads: @settings.wrk_threads, timeout: @settings.wrk_timeout)
    end

    def threads_for(connections) = [@settings.wrk_threads, connections].min

    def to_record(run, verdict, connections)
      r = run.result
      seconds = r[:duration_us] / 1e6
      {
        connections: connections,
        requests_per_sec: (r[:requests] / seconds).round(1),
        requests: r[:requests],
        seconds: seconds.round(3),
        latency_ms: %i[p50 p90 p99 p999 max mean].to_h { |k| [k, (r[:"#{k}_us"] / 1000.0).round(3)] },
        errors: { connect: r[:connect_errors], read: r[:read_errors], write: r[:write_errors],
                  timeout: r[:timeouts] },
        bad_status: r[:status_errors], # responses with status >= 400, as wrk counts them
        cpu: run.usage&.to_h,
        verdict: verdict.to_h,
        load_generator_bound: verdict.bound,
        wrk: run.argv.map { |a| a == Wrk::SCRIPT ? "bench/lib/bench/wrk_report.lua" : a }.join(" ")
      }
    end
  end
end
