# frozen_string_literal: true

require_relative "../lib/bench/http_load"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/wrk_trial"
require_relative "../lib/bench/report/format"

# BENCHMARKS.md #7 / issue 3: the seed's "Why Not Threads?" table (000_*):
# 1000 requests to a back end that delays 0/10/50/100/500 ms, made from a
# Spindle app under the blocking, threads and fibers engines.
module Bench
  # What "1000 requests" means here: the bench process sends 1000
  # GET /call?port=P&ms=D to the Spindle app under test, 100 at a time (100
  # client threads, a new connection per request); each makes one Net::HTTP
  # call to the back end on 127.0.0.1:P, which answers after D ms. No new
  # request starts after TIME_CAP seconds (the blocking engine cannot do 1000
  # calls of 500 ms in a bounded run); those in flight then finish. Figure:
  # completed requests ÷ time from the first send to the last response.
  #
  # The back end is a Spindle fibers process running bench/apps/backend.ru,
  # started once per bench run; it shares the 2 cores with everything else.
  class BackendLatencyTrial < WrkTrial
    REQUESTS = 1000
    CONCURRENCY = 100
    TIME_CAP = 10
    QUICK_REQUESTS = 200 # --quick: a smoke run of the same trial
    QUICK_TIME_CAP = 2

    def self.backend
      @backend ||= begin
        target = Scenario.new(name: "backend", app: "backend.ru", path: "/?ms=0", expect_body: "OK")
        server = Memory.start(name: "backend", runtime: :spindle, target: target, threads: 1) do |l|
          [RbConfig.ruby, "bin/spindle", "--engine", "fibers", "-b", "tcp://#{l.address}", "-q", l.rackup]
        end
        at_exit { server.stop }
        server
      end
    end

    def initialize(**)
      super
      @requests = settings.quick ? QUICK_REQUESTS : REQUESTS
      @time_cap = settings.quick ? QUICK_TIME_CAP : TIME_CAP
    end

    def warm_up(_connections)
      run(0, @requests / 5, 20)
    end

    # connections = the back end's delay in ms (the table's columns).
    def measure(delay_ms)
      result = run(delay_ms, @requests, CONCURRENCY)
      HttpLoad.record(result, connections: delay_ms,
                              client: "bench/lib/bench/http_load.rb: #{@requests} x GET /call?port=BACKEND&ms=#{delay_ms}, " \
                                      "#{CONCURRENCY} at a time (new connection each), no new request after #{@time_cap} s; " \
                                      "back end: #{self.class.backend.command_line}")
    end

    private

    def run(delay_ms, count, concurrency)
      port = self.class.backend.launch.port
      load = HttpLoad.new(port: @server.launch.port, concurrency: concurrency, time_cap: @time_cap,
                          server_pid: @server.pgid)
      load.run(Array.new(count) { ["/call?port=#{port}&ms=#{delay_ms}"] })
    end
  end

  module BackendLatencyReport
    module_function

    def x_label = "back-end delay, ms (each figure: 1000 requests, 100 at a time, or as many as start in 10 s)"

    SEED = { "blocking" => [2400, 19, 17, 10, 2], "threads" => [618, 470, 451, 441, 395],
             "NeverBlock" => [2360, 1997, 1837, 1656, 1031] }.freeze

    def sections(summary)
      delays = summary.connections
      procs = summary.processes.first
      fig = ->(server, d) { summary.figures(procs, d).find { |f| f.server == server } }
      done = lambda do |server, d|
        ms = summary.rounds(server, procs, d)
        ms.map { |m| m[:requests] }.minmax.uniq.join("–")
      end
      rows = %w[spindle-blocking spindle-threads spindle-fibers].map do |server|
        [server, *delays.map { |d| (f = fig.call(server, d)) ? "#{Report::Format.rps(f.median)} (#{done.call(server, d)} req)" : "–" }]
      end
      rows << ["**fibers ÷ threads**", *delays.map do |d|
        f = fig.call("spindle-fibers", d)
        t = fig.call("spindle-threads", d)
        f && t ? format("**%.2f×**", f.median / t.median) : "–"
      end]
      rows << ["fibers ÷ blocking", *delays.map do |d|
        f = fig.call("spindle-fibers", d)
        b = fig.call("spindle-blocking", d)
        f && b ? format("%.1f×", f.median / b.median) : "–"
      end]
      seed = SEED.map { |name, v| ["seed (Ruby 1.9): #{name}", *v.map(&:to_s)] }
      seed << ["seed: NeverBlock ÷ threads", *SEED["NeverBlock"].zip(SEED["threads"]).map { |n, t| format("%.2f×", n.to_f / t) }]
      errors = %w[spindle-blocking spindle-threads spindle-fibers].map do |server|
        [server, *delays.map { |d| (f = fig.call(server, d)) ? "#{f.errors} / #{f.bad_status}" : "–" }]
      end
      threads = summary.record[:commands].find { |k, _| k.to_s.start_with?("spindle-threads ") }&.last.to_s[/-t \S+/]
      header = ["engine (req/s, median)", *delays.map { |d| "#{d} ms" }]
      [<<~MD.chomp]
        ## The seed's table: requests per second by back-end delay

        Each figure: the bench process sends #{BackendLatencyTrial::REQUESTS} requests to the Spindle app
        (`bench/apps/backend_client.ru`), #{BackendLatencyTrial::CONCURRENCY} at a time, a new connection each; every
        request makes one `Net::HTTP` call (a new connection) to the back end on 127.0.0.1, a Spindle `fibers`
        process running `bench/apps/backend.ru`, which answers after the delay. No request starts after
        #{BackendLatencyTrial::TIME_CAP} s (the blocking engine would need 1000 × delay); those in flight finish and
        are counted; req/s = completed ÷ (first send → last response); the count completed is in brackets
        (min–max over rounds). `spindle-threads` runs `#{threads}`: as many threads as requests in flight, like the
        seed's threaded client. All of it — client, app, back end — shares the machine's 2 cores.

        #{Report::Format.table(header, rows)}

        The seed (NeverBlock, Ruby 1.9, a client application rather than a server; req/s):

        #{Report::Format.table(['seed', '0 ms', '10 ms', '50 ms', '100 ms', '500 ms'], seed)}

        Socket errors / statuses ≥ 400 (summed over the rounds):

        #{Report::Format.table(['engine', *delays.map { |d| "#{d} ms" }], errors)}
      MD
    end
  end
end

Bench::Scenario.define(
  name: "backend_latency",
  title: "Back-end latency: 1000 HTTP calls from a Spindle app",
  description: "Each request to the app makes one Net::HTTP call to a loopback back end that answers after " \
               "0, 10, 50, 100 or 500 ms: how much waiting on another service one process overlaps, per engine. " \
               "In the grids below, `c` is the back-end delay in ms (not a connection count).",
  goal: "The seed's \"Why Not Threads?\" table reproduced: blocking vs threads vs fibers, requests per second and " \
        "fibers' advantage over threads (BENCHMARKS.md: NeverBlock's fibers 1.25–2.1× faster than threads).",
  app: "backend_client.ru",
  path: "/",
  connections: [0, 10, 50, 100, 500],
  processes: [1],
  expect_body: "ready",
  servers: %w[spindle-blocking spindle-threads spindle-fibers],
  threads: { "spindle-threads" => Bench::BackendLatencyTrial::CONCURRENCY },
  trial: Bench::BackendLatencyTrial,
  report: Bench::BackendLatencyReport,
  # Two engines, two delays (the trial's quick size: 200 requests, 2 s cap).
  quick: { servers: %w[spindle-blocking spindle-fibers], connections: [0, 50] }
)
