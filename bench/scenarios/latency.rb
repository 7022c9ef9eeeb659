# frozen_string_literal: true

require_relative "../lib/bench/memory" # and Child, WrkTrial
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/parts"
require_relative "../lib/bench/server_process"
require_relative "../lib/bench/registry"
require_relative "../lib/bench/log"

# Issue 6: latency percentiles at fixed request rates (25, 50 and 75 % of
# Puma's maximum, measured in the same run), not at maximum throughput.
module Bench
  module Latency
    SCRIPT = File.expand_path("../lib/bench/paced.lua", __dir__)
    SHARES = [0.25, 0.50, 0.75].freeze
    CONNECTIONS = 50 # wrk connections carrying the paced requests
    CALIBRATION_CONNECTIONS = 16

    # Puma's maximum on this machine, measured once per bench/run process
    # (a Puma start of its own, wrk -c 16 unpaced), before the first server.
    def self.calibration(settings, scenario)
      @calibration ||= begin
        server = ServerProcess.for(spec: SERVERS.fetch("puma"), scenario: scenario, threads: settings.threads, processes: 1)
        server.start
        wrk = ->(seconds) { Wrk.new(server_pid: server.pgid, url: server.launch.url, connections: CALIBRATION_CONNECTIONS,
                                    duration: seconds, threads: 1, timeout: settings.wrk_timeout).run }
        wrk.call(settings.warmup)
        run = wrk.call(settings.duration)
        max = run.result[:requests] / (run.result[:duration_us] / 1e6)
        Log.info(format("latency: Puma's max (wrk -c %d, %d s) = %.0f req/s", CALIBRATION_CONNECTIONS, settings.duration, max))
        { puma_max_rps: max.round(1), command: server.command_line, connections: CALIBRATION_CONNECTIONS,
          seconds: settings.duration, rates: SHARES.map { |s| (max * s).round } }
      ensure
        server&.stop
      end
    end

    class Trial < WrkTrial
      def initialize(**)
        super
        @duration = settings.quick ? 2 : [settings.duration, 10].max
      end

      def warm_up(_connections)
        Latency.calibration(@settings, @scenario)
        wrk(CONNECTIONS, @settings.warmup, threads: 1).run
      end

      def measure(_connections)
        cal = Latency.calibration(@settings, @scenario)
        rates = cal[:rates].zip(SHARES).map { |rate, share| paced(rate, share) }
        middle = rates[rates.size / 2]
        middle.merge(connections: CONNECTIONS, calibration: cal, rates: rates)
      end

      private

      def paced(rate, share)
        rec = record(wrk(CONNECTIONS, @duration, threads: 1, script: SCRIPT, script_args: [rate]).run, CONNECTIONS, wrk_threads: 1)
        rec.merge(target_rps: rate, share_of_puma_max: share,
                  achieved_ratio: (rec[:requests_per_sec] / rate).round(3))
      end
    end

    module Report
      include Bench::Report::Names
      module_function

      def figures(record)
        P.by_server(record) do |rounds|
          SHARES.to_h { |share| [share, summarize(rounds.flat_map { |m| m[:rates] }.select { |r| r[:share_of_puma_max] == share })] }
        end
      end

      def summarize(runs)
        med = ->(&blk) { Stats.median(runs.map(&blk)) }
        { target: med.call { |r| r[:target_rps] }, achieved: med.call { |r| r[:requests_per_sec] },
          ratio: med.call { |r| r[:achieved_ratio] }, p50: med.call { |r| r[:latency_ms][:p50] },
          p99: med.call { |r| r[:latency_ms][:p99] }, p999: med.call { |r| r[:latency_ms][:p999] },
          max: med.call { |r| r[:latency_ms][:max] },
          late: runs.sum { |r| r[:paced_late].to_i }, sent: runs.sum { |r| r[:paced_sent].to_i },
          max_late: runs.map { |r| r[:paced_max_late_ms].to_f }.max,
          errors: runs.sum { |r| r[:errors].values.sum + r[:bad_status] }, rounds: runs.size }
      end

      def headline(record)
        parts = figures(record).map { |name, per| "#{name} #{F.ms(per[0.5][:p99])}" }
        "p99 ms at 50 % of Puma's max: #{parts.join(', ')}"
      end

      def markdown(record, json_name, cells)
        cal = record[:measurements].find { |m| m[:calibration] }&.dig(:calibration) || {}
        head = [["Rates", "#{SHARES.map { |s| "#{(s * 100).round} %" }.join(', ')} of Puma's maximum, measured in the same run " \
                          "(Puma 1 process, #{record[:settings][:threads_per_process]} threads, unpaced wrk -c #{cal[:connections]} for #{cal[:seconds]} s: " \
                          "**#{F.rps(cal[:puma_max_rps])} req/s**) → #{(cal[:rates] || []).map { |r| F.integer(r) }.join(', ')} req/s"],
                ["How the rate is held", "wrk with `bench/lib/bench/paced.lua`: wrk's per-request `delay()` hook gives each request its " \
                                         "own slot on an absolute schedule (start + n / rate, CLOCK_MONOTONIC through LuaJIT's FFI), " \
                                         "over #{CONNECTIONS} keep-alive connections; `achieved` is requests answered ÷ wrk's duration"],
                ["Latency", "wrk's histogram, from each request's actual send to its response; a request sent late because every " \
                            "connection was busy is counted in `late sends` (so coordinated omission is visible, not hidden)"]]
        rows = cells.flat_map do |name, per|
          per.map do |share, s|
            ["#{name}", "#{(share * 100).round} %", F.integer(s[:target].to_i), F.rps(s[:achieved]), s[:ratio] ? format("%.3f", s[:ratio]) : "–",
             F.ms(s[:p50]), F.ms(s[:p99]), F.ms(s[:p999]), F.ms(s[:max]),
             "#{F.integer(s[:late])} of #{F.integer(s[:sent])}#{s[:max_late].to_f.positive? ? format(' (worst %.0f ms)', s[:max_late]) : ''}",
             s[:errors], s[:rounds]]
          end
        end
        table = F.table(["server", "rate (of Puma max)", "target req/s", "achieved req/s", "achieved ÷ target", "p50 ms", "p99 ms",
                         "p99.9 ms", "max ms", "late sends (> 1 ms behind slot)", "errors", "rounds"], rows)
        compare = SHARES.map do |share|
          spindle = cells.select { |n, _| n.start_with?("spindle") }
          peers = cells.reject { |n, _| n.start_with?("spindle") }
          parts = spindle.flat_map do |sn, sp|
            peers.map { |pn, pp| "#{sn} p99 = #{F.times(sp[share][:p99], pp[share][:p99])} #{pn}'s" }
          end
          "- #{(share * 100).round} %: #{parts.join('; ')}"
        end
        [P.title(record, json_name), P.run_table(record, P.load_rows(record) + head), "## Latency at a fixed rate\n\n#{table}",
         "## p99 ratios (lower is better for Spindle)\n\n#{compare.join("\n")}",
         "Each figure is the median of the rounds (latency percentiles are per-round percentiles, then the median).",
         P.failures(record),
         P.commands(record, ["# calibration: #{cal[:command]}",
                                 *record[:measurements].reject { |m| m[:failed] }.flat_map { |m| (m[:rates] || []).map { |r| r[:wrk] } }])]
          .compact.join("\n\n") << "\n"
      end

      def chart(record, cells)
        chart = P.chart(record, "Latency at a fixed request rate", "#{record[:machine][:nproc]} cores shared with wrk · 1 process · paced wrk, #{CONNECTIONS} connections",
                        y_label: "ms (median of rounds; lower is better)", x_label: "request rate, share of Puma's maximum")
        groups = SHARES.map { |s| "#{(s * 100).round} %" }
        color = ->(n) { Bench::Report::Chart::COLORS[n] }
        { p50: "p50 latency, ms", p99: "p99 latency, ms", p999: "p99.9 latency, ms" }.each do |key, title|
          chart.panel(title, groups: groups, series: cells.map { |n, per| { name: n, color: color.call(n), values: SHARES.map { |s| per[s][key] } } })
        end
        chart.render
      end
    end
  end
end

Bench::Scenario.define(
  name: "latency",
  title: "Latency at a fixed request rate",
  description: "GET / (hello) at three fixed request rates — 25, 50 and 75 % of Puma's maximum on this machine, " \
               "measured at the start of the run — paced by wrk's delay() hook; p50/p99/p99.9 per server.",
  goal: "Latency percentiles (p50/p99/p99.9) at a fixed request rate, not only throughput; Spindle's threads and " \
        "fibers engines beside Puma and Falcon.",
  app: "hello.ru",
  path: "/",
  connections: [50],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads spindle-fibers puma falcon],
  trial: Bench::Latency::Trial,
  report: Bench::Latency::Report,
  # Three paced runs per start, and Puma's calibration start on top.
  quick: { servers: %w[spindle-threads puma], budget_s: 60 }
)
