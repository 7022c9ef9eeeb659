# frozen_string_literal: true

require_relative "../lib/bench/pg_support"

# BENCHMARKS.md #5 / issue 3: 10 concurrent `select pg_sleep(1)` on one
# process, pool of 10. The ceiling is 10 req/s (10 in flight, 1 s each).
module Bench
  # 10 client threads, each sending GET /sleep?seconds=1 over a new connection,
  # one request at a time, until REQUESTS are done or the time cap (--duration)
  # passes; the figure is completed requests over the time from the first send
  # to the last response, so nothing in flight at the end is lost.
  class PgSleepTrial < WrkTrial
    POOL = 10
    REQUESTS = 100

    def warm_up(_connections) = PgSupport.warm_pool(@server, POOL)

    def measure(connections)
      load = HttpLoad.new(port: @server.launch.port, concurrency: connections, time_cap: @settings.duration,
                          server_pid: @server.pgid)
      result = load.run(Array.new(REQUESTS) { ["/sleep?seconds=1"] })
      HttpLoad.record(result, connections: connections,
                              client: "bench/lib/bench/http_load.rb: #{connections} threads, GET /sleep?seconds=1 " \
                                      "(one new connection each), #{REQUESTS} requests or #{@settings.duration} s, " \
                                      "in-flight ones drained")
    end
  end

  module PgSleepReport
    module_function

    def sections(summary)
      rows = summary.processes.flat_map do |procs|
        summary.connections.flat_map do |c|
          figures = summary.figures(procs, c)
          blocking = figures.find { |f| f.server == "spindle-blocking" }
          figures.map do |f|
            ms = summary.rounds(f.server, procs, c)
            [f.server, c, format("%.2f", f.median), "#{format('%.2f', f.min)}–#{format('%.2f', f.max)}",
             format("%.1f %%", 100.0 * f.median / c), blocking ? format("%.2f×", f.median / blocking.median) : "–",
             ms.sum { |m| m[:requests] }, f.errors, f.bad_status,
             f.server == "spindle-fibers" ? (f.median >= 9.5 ? "**met** (≥ 9.5)" : "**not met** (< 9.5)") : "–"]
          end
        end
      end
      header = ["server", "concurrent", "req/s (median)", "min–max", "% of ceiling (c/1 s)", "× blocking",
                "requests (all rounds)", "socket errors", "status ≥ 400", "target"]
      [<<~MD.chomp]
        ## Against the ceiling and the seed

        Ceiling: #{summary.connections.join(', ')} requests in flight × 1 s each = that many req/s. The seed
        (NeverBlock) got 0.98 req/s blocking → 9.3 req/s fibered. PostgreSQL: a private server from
        `test/support/postgres_server.rb` (UNIX socket, fsync off), the app `examples/postgres/config.ru` with
        `DB_POOL=#{PgSleepTrial::POOL}` (connection_pool), pool warmed before measuring. Client: #{PgSleepTrial::REQUESTS}
        requests per round from the bench process (Ruby threads; see Commands), timed to the last response.

        #{Report::Format.table(header, rows)}
      MD
    end
  end
end

Bench::Scenario.define(
  name: "postgres",
  title: "PostgreSQL: 10 concurrent select pg_sleep(1)",
  description: "GET /sleep?seconds=1 runs `select pg_sleep(1)` through a pool of 10 PostgreSQL connections; " \
               "10 clients at once, one process.",
  goal: "≥ 9.5 req/s on one process with the fiber engine and a pool of ≥ 10 connections (seed: 0.98 blocking, " \
        "9.3 fibered).",
  app: Bench::PgSupport::APP,
  path: "/ping",
  connections: [10],
  processes: [1],
  expect_body: '{"pong":true}',
  servers: %w[spindle-blocking spindle-fibers],
  env: Bench::PgSupport.env(Bench::PgSleepTrial::POOL),
  trial: Bench::PgSleepTrial,
  report: Bench::PgSleepReport,
  # The blocking engine drains what is in flight at the time cap one second
  # each: 4 clients keep that short.
  quick: { connections: [4] }
)
