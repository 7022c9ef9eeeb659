# frozen_string_literal: true

require "json"
require "open3"
require_relative "../lib/bench/memory" # and Child, WrkTrial
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/parts"

# Issue 6 / BENCHMARKS.md #11: 10,000 idle keep-alive connections held open
# with wrk load on top, per engine, Puma beside them.
module Bench
  module IdleConnections
    HOLDER = File.expand_path("../lib/bench/clients/idle_holder.rb", __dir__)

    # One server start: wrk alone, then IDLE keep-alive connections opened
    # (each served one request, then left idle) and held, wrk again on top,
    # then every idle connection asked once more (are they still served?).
    # Everything after the opening fits in the servers' 20 s keep-alive
    # timeout (Spindle's and Puma's default), so no idle connection is closed
    # for idling before the check.
    class Trial < WrkTrial
      def initialize(**)
        super
        @idle = settings.quick ? 1_000 : 10_000
        @duration = settings.quick ? 2 : 5
      end

      def measure(connections)
        pid = @server.pgid
        alone = record(wrk(connections, @duration).run, connections)
        before = { rss_kib: Memory.tree_rss_kib(pid), fds: Memory.tree_fds(pid), threads: Memory.tree_threads(pid) }
        held = hold(connections, pid)
        alone.merge(idle_wanted: @idle, before: before, **held)
      end

      private

      def hold(connections, pid)
        Open3.popen2(RbConfig.ruby, HOLDER, @server.launch.port.to_s, @idle.to_s, pgroup: true) do |stdin, stdout, thread|
          opened = Child.read_json(stdout, 180) or return { idle: { failed: "the idle client did not report within 180 s" } }
          sleep 1 # let the server settle before sampling
          idle = { rss_kib: Memory.tree_rss_kib(pid), fds: Memory.tree_fds(pid), threads: Memory.tree_threads(pid) }
          loaded = @server.alive? ? record(wrk(connections, @duration).run, connections) : { failed: "server exited: #{@server.death}" }
          after_load = { rss_kib: Memory.tree_rss_kib(pid), fds: Memory.tree_fds(pid) }
          stdin.puts("ping")
          ping = Child.read_json(stdout, 120)
          stdin.puts("exit")
          stdin.close
          thread.join(30)
          { open: opened, with_idle: idle, under_idle: loaded, after_load: after_load, ping: ping,
            server_alive: @server.alive?,
            holder: "ruby bench/lib/bench/clients/idle_holder.rb PORT #{@idle}" }
        ensure
          (Process.kill(:KILL, -thread.pid) rescue nil) if thread&.alive? # rubocop:disable Style/RescueModifier
        end
      rescue Wrk::Failed => e
        { under_idle: { failed: e.message } }
      end
    end

    module Report
      include Bench::Report::Names
      module_function

      def figures(record)
        P.by_server(record) { |rounds| summarize(rounds) }
      end

      def summarize(rounds)
        per_conn = rounds.map do |m|
          opened = m.dig(:open, :opened).to_i
          next nil unless opened.positive? && m.dig(:with_idle, :rss_kib)

          (m[:with_idle][:rss_kib] - m[:before][:rss_kib]) * 1024.0 / opened
        end
        under = rounds.map { |m| m[:under_idle] }.compact.reject { |u| u[:failed] }
        {
          rounds: rounds.size, wanted: rounds.first[:idle_wanted],
          opened: rounds.map { |m| m.dig(:open, :opened) }, open_s: Stats.median(rounds.map { |m| m.dig(:open, :seconds) }),
          answered: rounds.map { |m| m.dig(:ping, :answered) }, idle_for: Stats.median(rounds.map { |m| m.dig(:ping, :idle_for_s) }),
          rps_alone: Stats.median(rounds.map { |m| m[:requests_per_sec] }),
          p99_alone: Stats.median(rounds.map { |m| m[:latency_ms][:p99] }),
          rps_idle: Stats.median(under.map { |u| u[:requests_per_sec] }),
          p99_idle: Stats.median(under.map { |u| u[:latency_ms][:p99] }),
          errors_idle: under.sum { |u| u[:errors].values.sum },
          rss_before: Stats.median(rounds.map { |m| m.dig(:before, :rss_kib) }),
          rss_idle: Stats.median(rounds.map { |m| m.dig(:with_idle, :rss_kib) }),
          fds_idle: Stats.median(rounds.map { |m| m.dig(:with_idle, :fds) }),
          threads_idle: Stats.median(rounds.map { |m| m.dig(:with_idle, :threads) }),
          bytes_per_conn: Stats.median(per_conn),
          failures: rounds.filter_map { |m| m.dig(:under_idle, :failed) || m.dig(:idle, :failed) },
          alive: rounds.all? { |m| m.fetch(:server_alive, true) }
        }
      end

      def headline(record)
        parts = figures(record).map do |name, s|
          kib = s[:bytes_per_conn] ? format("%.1f KiB/conn", s[:bytes_per_conn] / 1024.0) : "–"
          "#{name} #{completes(s) == 'yes' ? '' : '(incomplete) '}#{kib}, #{F.times(s[:rps_idle], s[:rps_alone])} req/s"
        end
        "#{parts.join('; ')}"
      end

      def completes(s)
        all_open = s[:opened].all? { |o| o.to_i >= s[:wanted] }
        all_answer = s[:answered].all? { |a| a.to_i >= s[:wanted] }
        return "yes" if all_open && all_answer && s[:failures].empty? && s[:alive]

        reasons = []
        reasons << "opened #{s[:opened].join('/')} of #{F.integer(s[:wanted])}" unless all_open
        reasons << "answered #{s[:answered].map(&:to_i).join('/')} afterwards" unless all_answer
        reasons << s[:failures].join('; ') unless s[:failures].empty?
        reasons << "server exited" unless s[:alive]
        "**no**: #{reasons.join('; ')}"
      end

      def markdown(record, json_name, rows)
        m0 = record[:measurements].find { |m| m[:idle_wanted] }
        idle = m0 ? m0[:idle_wanted] : 0
        head = [["Idle connections", "#{F.integer(idle)} keep-alive connections from 127.0.0.1, each served one GET / and then left idle, opened one after another by `bench/lib/bench/clients/idle_holder.rb`"],
                ["Load on top", "wrk -c #{record[:settings][:connections].join(',')} GET / for #{m0 && m0[:seconds].round}s, without and then with the idle connections"],
                ["Check", "after the load, every idle connection sends one more GET / and must be answered (within the servers' 20 s keep-alive timeout)"]]
        table = F.table(["server", "completes", "open time s", "req/s alone", "req/s with idle", "× alone", "p99 ms alone", "p99 ms with idle",
                         "wrk errors with idle", "RSS before MiB", "RSS with idle MiB", "**KiB per idle conn**", "fds with idle", "threads with idle", "rounds"],
                        rows.map do |name, s|
                          [name, completes(s), s[:open_s], F.rps(s[:rps_alone]), F.rps(s[:rps_idle]), F.times(s[:rps_idle], s[:rps_alone]),
                           F.ms(s[:p99_alone]), F.ms(s[:p99_idle]), s[:errors_idle], F.mib_kib(s[:rss_before]), F.mib_kib(s[:rss_idle]),
                           s[:bytes_per_conn] ? format("%.1f", s[:bytes_per_conn] / 1024.0) : "–", s[:fds_idle], s[:threads_idle], s[:rounds]]
                        end)
        notes = <<~MD.chomp
          ## How to read this

          - `KiB per idle conn` = (RSS of the server's process tree with the idle connections held − RSS just before
            they were opened, after the first wrk run) ÷ connections opened; the median of the rounds.
          - `× alone`: throughput with the idle connections held ÷ throughput without, same start.
          - Spindle runs with `--max-connections 11000` here: its default cap (4096 per process) would leave the rest
            waiting in the kernel backlog. Peers run their defaults. Every server raises or has a soft RLIMIT_NOFILE
            of 20000 (the hard limit here); the idle client raises its own.
          - The idle client and wrk share the 2 cores with the server.
        MD
        [P.title(record, json_name), P.run_table(record, P.load_rows(record) + head), "## Results\n\n#{table}", notes, P.failures(record),
         P.commands(record, record[:measurements].reject { |m| m[:failed] }.flat_map { |m| [m[:wrk], m[:holder]] }.compact)]
          .compact.join("\n\n") << "\n"
      end

      def chart(record, rows)
        chart = P.chart(record, "10,000 idle keep-alive connections", "#{record[:machine][:nproc]} cores shared with wrk and the idle client · 1 process",
                        y_label: "", x_label: "server")
        color = ->(n) { Bench::Report::Chart::COLORS[n] }
        chart.panel("req/s (wrk) without and with the idle connections", groups: ["without idle", "with idle"],
                    series: rows.map { |n, s| { name: n, color: color.call(n), values: [s[:rps_alone], s[:rps_idle]] } })
        chart.panel("KiB of server RSS per idle connection", groups: ["KiB per idle connection"],
                    series: rows.map { |n, s| { name: n, color: color.call(n), values: [s[:bytes_per_conn] && (s[:bytes_per_conn] / 1024.0).round(1)] } })
        chart.render
      end
    end
  end
end

Bench::Scenario.define(
  name: "idle_connections",
  title: "10,000 idle keep-alive connections",
  description: "10,000 keep-alive connections from 127.0.0.1, each served once and then left idle, held open while " \
               "wrk loads the same process; throughput with and without them, and server memory per idle connection.",
  goal: "The run completes on every engine that claims to handle it; throughput under the idle load; " \
        "memory per idle connection.",
  app: "hello.ru",
  path: "/",
  connections: [64],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-blocking spindle-threads spindle-fibers spindle-hybrid puma],
  server_args: { "spindle-*" => ["--max-connections", "11000"] },
  trial: Bench::IdleConnections::Trial,
  report: Bench::IdleConnections::Report,
  quick: { servers: %w[spindle-fibers puma] } # and 1,000 idle connections, not 10,000 (the trial's own quick size)
)
