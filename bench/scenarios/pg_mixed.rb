# frozen_string_literal: true

require_relative "../lib/bench/pg_support"

# BENCHMARKS.md #6 / issue 3: the seed's mixed table (001_*, "Faster IO for
# Ruby with Postgres"): L long queries, each followed by M short ones,
# blocking vs fibers, with the advantage column.
module Bench
  # The seed's test program iterated L times, each iteration one long query
  # and then `multiplier` short ones, the non-blocking run with a pool of 100
  # fibers over 12 connections. Here, over HTTP to examples/postgres/config.ru
  # on one Spindle process (DB_POOL=12): L iterations run at once (one client
  # thread each, L <= 100 like the seed's fiber pool), each one new keep-alive
  # connection carrying GET /sleep?seconds=LONG then MULTIPLIER x GET /now
  # (`select now()`). The figure is the wall time for all of it.
  #
  # The seed does not give its long query; its blocking times (10 long + 20
  # short in 0.56 s, 10 + 50 in 0.55 s) put it near 50 ms, so LONG = 0.05 s.
  class PgMixedTrial < WrkTrial
    POOL = 12
    LONG = 0.05
    MULTIPLIERS = [1, 2, 5, 10, 20, 50, 100].freeze
    QUICK_MULTIPLIERS = [1, 5].freeze
    CELL_CAP = 120 # seconds: no new iteration starts past it

    def self.multipliers(quick = false)
      ENV["BENCH_PG_MIXED_MULTIPLIERS"]&.split(",")&.map { |v| Integer(v) } || (quick ? QUICK_MULTIPLIERS : MULTIPLIERS)
    end

    def initialize(**)
      super
      @multipliers = self.class.multipliers(settings.quick)
    end

    def warm_up(_connections) = PgSupport.warm_pool(@server, POOL)

    # connections = L, the number of long queries (and of concurrent iterations).
    def measure(long_queries)
      cells = @multipliers.map { |m| cell(long_queries, m) }
      results = cells.map(&:last)
      total = HttpLoad::Result.new(
        requests: results.sum(&:requests), seconds: results.sum(&:seconds), latencies: results.flat_map(&:latencies),
        bad_status: results.sum(&:bad_status), sessions_done: results.sum(&:sessions_done),
        sessions_total: results.sum(&:sessions_total), capped: results.any?(&:capped),
        errors: %i[connect read timeout].to_h { |k| [k, results.sum { |r| r.errors[k] }] }, usage: results.last.usage
      )
      HttpLoad.record(total, connections: long_queries, client: client_line(long_queries))
              .merge(cells: cells.map { |m, r| cell_record(long_queries, m, r) })
    end

    private

    def cell(long_queries, multiplier)
      load = HttpLoad.new(port: @server.launch.port, concurrency: long_queries, time_cap: CELL_CAP,
                          server_pid: @server.pgid)
      session = ["/sleep?seconds=#{LONG}", *Array.new(multiplier, "/now")].freeze
      [multiplier, load.run(Array.new(long_queries, session))]
    end

    def cell_record(long_queries, multiplier, result)
      { long: long_queries, short: long_queries * multiplier, multiplier: multiplier,
        seconds: result.seconds.round(3), requests: result.requests, bad_status: result.bad_status,
        errors: result.errors.values.sum, capped: result.capped }
    end

    def client_line(long_queries)
      "bench/lib/bench/http_load.rb: #{long_queries} threads at once, each one connection: GET /sleep?seconds=#{LONG} " \
        "then M x GET /now, M in #{@multipliers.join(',')}; cap #{CELL_CAP} s per M"
    end
  end

  module PgMixedReport
    module_function

    def x_label = "L, long queries (= iterations at once); each followed by M short ones, all M summed"
    def y_label = "requests/s over the whole row (median; whisker: min–max)"

    def sections(summary)
      ms = summary.record[:measurements].reject { |m| m[:failed] }
      cells = ms.flat_map { |m| (m[:cells] || []).map { |c| c.merge(server: m[:server]) } }
      multipliers = cells.map { |c| c[:multiplier] }.uniq.sort
      rows = multipliers.flat_map do |mult|
        summary.connections.filter_map { |l| row(cells, l, mult) }
      end
      header = ["M/L", "long (L)", "short", "blocking s (median)", "min–max", "fibers s (median)", "min–max",
                "advantage (1 − fibers/blocking)", "seed's advantage", "errors / ≥ 400"]
      [<<~MD.chomp]
        ## The seed's table: blocking vs fibers

        Wall time to run L long queries (`select pg_sleep(#{PgMixedTrial::LONG})`), each followed by M/L short ones
        (`select now()`), through HTTP to `examples/postgres/config.ru` on one Spindle process with
        `DB_POOL=#{PgMixedTrial::POOL}` (the seed's 12 connections): L client iterations at once (the seed's
        fiber pool was 100), each on its own keep-alive connection, from Ruby threads in the bench process.
        The seed does not state its long query; its blocking times put it near 50 ms, hence #{(PgMixedTrial::LONG * 1000).round} ms.
        The seed's grid had no M/L = 1 row; its figures are from Ruby 1.9 in one process, no HTTP.
        Medians of #{summary.record[:settings][:rounds]} rounds; advantage from the medians.

        #{Report::Format.table(header, rows)}
      MD
    end

    SEED = { # [L, M/L] => advantage, from 001_*
      [10, 2] => "10.27 %", [50, 2] => "11.19 %", [100, 2] => "13.53 %", [10, 5] => "27.04 %", [50, 5] => "32.82 %",
      [100, 5] => "33.39 %", [10, 10] => "33.76 %", [50, 10] => "39.67 %", [100, 10] => "38.13 %",
      [10, 20] => "38.12 %", [50, 20] => "38.73 %", [100, 20] => "36.53 %", [10, 50] => "36.57 %",
      [50, 50] => "32.36 %", [100, 50] => "10.93 %", [10, 100] => "35.40 %", [50, 100] => "30.31 %",
      [100, 100] => "11.15 %"
    }.freeze

    def row(cells, long, mult)
      pick = ->(server) { cells.select { |c| c[:server] == server && c[:long] == long && c[:multiplier] == mult } }
      blocking = pick.call("spindle-blocking")
      fibers = pick.call("spindle-fibers")
      return nil if blocking.empty? && fibers.empty?

      med = ->(list) { Stats.median(list.map { |c| c[:seconds] }) }
      span = ->(list) { list.empty? ? "–" : format("%.2f–%.2f", *list.map { |c| c[:seconds] }.minmax) }
      sec = ->(v) { v ? format("%.2f", v) : "–" }
      b = med.call(blocking)
      f = med.call(fibers)
      capped = (blocking + fibers).any? { |c| c[:capped] } ? " (capped: incomplete)" : ""
      advantage = b && f ? format("%.1f %%", 100.0 * (1 - f / b)) : "–"
      bad = (blocking + fibers).sum { |c| c[:errors] + c[:bad_status] }
      [":1/#{mult}", long, long * mult, sec.call(b), span.call(blocking), sec.call(f), span.call(fibers),
       "#{advantage}#{capped}", SEED.fetch([long, mult], "–"), bad]
    end
  end
end

Bench::Scenario.define(
  name: "pg_mixed",
  title: "PostgreSQL mixed load: long queries each followed by short ones",
  description: "L iterations at once, each one long query (`select pg_sleep(0.05)`) then M/L short ones " \
               "(`select now()`), over HTTP to one Spindle process with a pool of 12: the seed's " \
               "NeverBlock table, blocking vs fibers.",
  goal: "The seed's table reproduced (L 10/50/100 × M/L 1/2/5/10/20/50/100), with the advantage column " \
        "(seed: 10–40 % less time non-blocking).",
  app: Bench::PgSupport::APP,
  path: "/ping",
  connections: [10, 50, 100],
  processes: [1],
  expect_body: '{"pong":true}',
  servers: %w[spindle-blocking spindle-fibers],
  env: Bench::PgSupport.env(Bench::PgMixedTrial::POOL),
  trial: Bench::PgMixedTrial,
  report: Bench::PgMixedReport,
  quick: { connections: [10] } # and M/L 1 and 5 only (the trial's quick size)
)
