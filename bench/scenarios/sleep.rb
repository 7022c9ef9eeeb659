# frozen_string_literal: true

require_relative "../lib/bench/wrk_trial"
require_relative "../lib/bench/child"
require_relative "../lib/bench/http_probe"
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/format"

# BENCHMARKS.md #3 / issue 3: a slow app (sleep 1 s per request) at c = 100 and
# 1000 on one process. The ceiling is c requests per second (every connection
# has one request in flight, each takes 1 s); a thread pool's is threads / 1 s.
module Bench
  # wrk loads GET /sleep; the scenario's path (/ready, instant) is only the
  # readiness probe's, which gives up on an answer slower than 1 s.
  class SleepTrial < WrkTrial
    PATH = "/sleep"
    DRAIN = 60 # seconds: the most the idle check waits

    # Nothing to warm (no JIT, no cache): one request, not a wrk run whose
    # requests a thread pool would still be working through afterwards.
    def warm_up(_connections)
      HttpProbe.get(@server.launch.host, @server.launch.port, PATH, timeout: 5)
    end

    # Before each figure, wait until the server answers GET /ready, i.e. until
    # whatever the previous wrk run left queued (a thread pool works through
    # its requests after wrk has closed their connections) is done; bounded
    # by DRAIN. The wait is recorded.
    def measure(connections)
      started = Child.now
      ready = HttpProbe.get(@server.launch.host, @server.launch.port, "/ready", timeout: DRAIN)
      super.merge(idle_wait_s: (Child.now - started).round(2), idle_before: !ready.nil?)
    end

    private

    def wrk(connections, duration, **options) = super(connections, duration, path: PATH, **options)
  end

  module SleepReport
    module_function

    def x_label = "concurrent connections (wrk -c); ceiling = c req/s (threads: threads/1 s)"

    # The ceiling for one server: c for an engine that waits without holding
    # a thread, threads / 1 s for a thread pool (one request per thread).
    def ceiling(summary, server, connections)
      spec = summary.record[:servers].find { |s| s[:name] == server }
      return connections.to_f unless server == "spindle-threads" || server == "puma"

      threads = summary.record[:commands].find { |k, _| k.to_s.start_with?("#{server} ") }&.last.to_s[/-t \d+:(\d+)/, 1]
      spec && threads ? [threads.to_f, connections].min : connections.to_f
    end

    def sections(summary)
      rows = summary.processes.flat_map do |procs|
        summary.connections.flat_map do |c|
          summary.figures(procs, c).map { |f| row(summary, f, c) }
        end
      end
      header = ["server", "c", "ceiling req/s", "req/s (wrk, median)", "% of ceiling", "c ÷ mean latency", "% of ceiling",
                "mean latency s", "socket errors", "status ≥ 400", "idle wait before, s", "target"]
      [<<~MD.chomp]
        ## Against the ceiling

        Ceiling = c req/s: each of the c connections always has one request in flight and each takes 1 s.
        For `spindle-threads` it is threads ÷ 1 s (#{threads_note(summary)}). wrk's req/s counts only requests
        that *completed* inside its #{summary.record[:settings][:duration_s]} s window, so a request still in flight
        at the end is lost (up to 1 s of c requests: the first column under-reports by up to
        1/#{summary.record[:settings][:duration_s]}). `c ÷ mean latency` is the closed-loop rate the measured latency implies
        (Little's law), without that truncation. Target (issue 3): `fibers` and `hybrid` within 5 % of the ceiling,
        judged on the better-founded `c ÷ mean latency`, with wrk's figure beside it. Medians of the rounds.
        Before each figure the harness waits (≤ #{SleepTrial::DRAIN} s) until `GET /ready` answers, so what the previous
        wrk run left queued in a thread pool does not count against the next figure: `idle wait before`.

        #{Report::Format.table(header, rows)}
      MD
    end

    def threads_note(summary)
      summary.record[:commands].map { |k, line| "#{k.to_s.split.first}: `#{line[/-t \S+/] || "no -t"}`" }.uniq.join(", ")
    end

    def row(summary, figure, c)
      ceiling = ceiling(summary, figure.server, c)
      rounds = summary.rounds(figure.server, figure.processes, c)
      mean_s = Stats.median(rounds.map { |m| m[:latency_ms][:mean] / 1000.0 })
      little = mean_s&.positive? ? [c / mean_s, c.to_f].min : nil
      little = nil if figure.server == "spindle-threads" # timeouts drop from wrk's latency: no closed-loop figure
      pct = ->(v) { v ? format("%.1f %%", 100.0 * v / ceiling) : "–" }
      target = if %w[spindle-fibers spindle-hybrid].include?(figure.server)
                 (little || 0) >= 0.95 * ceiling ? "**met**" : "**not met**"
               else
                 "–"
               end
      [figure.server, c, Report::Format.integer(ceiling.round), format("%.1f", figure.median), pct.call(figure.median),
       little ? format("%.1f", little) : "n/a (timeouts)", pct.call(little), mean_s ? format("%.3f", mean_s) : "–",
       figure.errors, figure.bad_status, format("%.1f", Stats.median(rounds.map { |m| m[:idle_wait_s].to_f }) || 0), target]
    end
  end
end

Bench::Scenario.define(
  name: "sleep",
  title: "Slow app: sleep 1 s per request",
  description: "GET /sleep answered after `sleep 1` by a one-line Rack app, over keep-alive connections, on one " \
               "process: how many requests one process keeps waiting at once.",
  goal: "`fibers` and `hybrid` within 5 % of the ceiling (c req/s) on one process; `threads` at threads/1 s; " \
        "Falcon beside them.",
  app: "sleep.ru",
  path: "/ready",
  connections: [100, 1000],
  processes: [1],
  expect_body: "ready",
  trial: Bench::SleepTrial,
  servers: %w[spindle-fibers spindle-hybrid spindle-threads falcon],
  threads: { "spindle-hybrid" => 2 },
  report: Bench::SleepReport,
  # c = 1000 on a thread pool leaves a minute of queued sleeps to drain.
  quick: { servers: %w[spindle-fibers falcon], connections: [100] }
)
