# frozen_string_literal: true

require "csv"
require "fileutils"
require_relative "../lib/bench/memory" # and Child, WrkTrial
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/parts"
require_relative "../lib/bench/log"

# Issue 5 / BENCHMARKS.md #12: slowloris, slow body and slow read
# (Debian's slowhttptest) against one process, while wrk measures normal
# hello traffic beside each attack.
module Bench
  module SlowClients
    # slowhttptest attacks, each bounded by -l. The attack length covers its
    # ramp-up, the wrk run and a margin, so every attack connection is held
    # (as far as the server lets it) for the whole measurement.
    ATTACKS = {
      "slowloris" => { flag: "-H", path: "/", args: %w[-i 5 -x 24],
                       what: "request heads trickled: a 24-byte header line every 5 s, never finished" },
      "slow_body" => { flag: "-B", path: "/", args: %w[-i 5 -x 10 -s 65536],
                       what: "POST with Content-Length 65536, 10 bytes of body every 5 s" },
      "slow_read" => { flag: "-X", path: "/big", args: %w[-k 3 -n 2 -w 512 -y 1024 -z 32],
                       what: "GET /big (1 MiB) ×3 pipelined, 512–1024-byte window, 32 bytes read every 2 s" }
    }.freeze

    def self.tool_version
      out = `slowhttptest -h 2>&1`
      out[/version (\S+)/, 1] || "unknown"
    rescue SystemCallError
      "missing"
    end

    # One server start: baseline wrk, then each attack with wrk beside it.
    class Trial < WrkTrial
      def initialize(**)
        Setup.packages!("/usr/bin/slowhttptest" => "slowhttptest") # Debian's, on first use like wrk
        super
        @attack_conns = settings.quick ? 100 : 1000
        @rate = settings.quick ? 100 : 250
        @duration = settings.quick ? 2 : [settings.duration, 10].max
        @margin = settings.quick ? 1 : 2 # seconds past the ramp-up, and (twice) past the wrk run
      end

      def measure(connections)
        pid = @server.pgid
        base_fds = Memory.tree_fds(pid)
        baseline = record(wrk(connections, @duration).run, connections)
        attacks = ATTACKS.to_h { |name, attack| [name, attack(name, attack, connections, base_fds)] }
        baseline.merge(baseline_fds: base_fds, attack_connections: @attack_conns, attack_rate: @rate,
                       wrk_seconds: @duration, slowhttptest_version: SlowClients.tool_version, attacks: attacks)
      end

      private

      def attack(name, attack, connections, base_fds)
        pid = @server.pgid
        ramp = (@attack_conns.to_f / @rate).ceil + @margin
        length = ramp + @duration + 2 * @margin
        dir = File.join(Paths::TMP, "slow_clients")
        FileUtils.mkdir_p(dir)
        prefix = File.join(dir, "#{@server.launch.spec.name}-#{name}")
        argv = ["slowhttptest", attack[:flag], "-c", @attack_conns.to_s, "-r", @rate.to_s, "-l", length.to_s,
                "-p", "3", *attack[:args], "-u", @server.launch.url(attack[:path]), "-g", "-o", prefix]
        out = File.open("#{prefix}.log", "w")
        attacker = Process.spawn(*argv, out: out, err: out, in: File::NULL, pgroup: true,
                                        rlimit_nofile: [[@attack_conns + 200, 20_000].min] * 2)
        out.close
        sleep ramp # slowhttptest opens @rate connections per second: let it reach its count
        held_fds = Memory.tree_fds(pid)
        run = wrk(connections, @duration).run
        held_fds_end = Memory.tree_fds(pid)
        status = Child.wait(attacker, length + 20)
        drained = drain(base_fds)
        stats = csv_stats("#{prefix}.csv")
        record(run, connections).merge(
          attack: name, slowhttptest: argv.join(" ").sub(%r{127\.0\.0\.1:\d+}, "127.0.0.1:PORT").sub(prefix, "bench/tmp/slow_clients/NAME"),
          attack_exit: status&.exitstatus, server_fds_during: [held_fds, held_fds_end],
          drain_seconds: drained, server_alive: @server.alive?, attacker: stats
        )
      ensure
        Child.kill(attacker) if attacker && !status
      end

      # After the attacker has gone: seconds until the server's descriptor
      # count is back within 16 of its baseline (nil: not within 30 s).
      def drain(base_fds)
        start = Child.now
        while Child.now - start < 30
          return (Child.now - start).round(1) if Memory.tree_fds(@server.pgid) <= base_fds + 16

          sleep 0.25
        end
        nil
      end

      # slowhttptest's CSV: seconds, closed, pending, connected, service available.
      def csv_stats(path)
        rows = CSV.read(path, headers: true).map { |r| r.to_h.to_h { |k, v| [k.to_s.strip.downcase, v.to_i] } } rescue [] # rubocop:disable Style/RescueModifier
        return {} if rows.empty?

        connected = rows.map { |r| r["connected"] }
        { max_connected: connected.max, last_connected: connected.last,
          max_closed: rows.map { |r| r["closed"] }.max,
          probe_unavailable_seconds: rows.count { |r| r["service available"].zero? } } # its own probe, once a second: 0 = no answer
      end
    end

    # The page: normal clients' throughput and p99 without and with each attack.
    module Report
      include Bench::Report::Names
      module_function

      def figures(record)
        P.by_server(record) do |rounds|
          cells = { "none" => rounds }
          ATTACKS.each_key { |a| cells[a] = rounds.map { |m| m.dig(:attacks, a.to_sym) }.compact }
          cells.transform_values { |list| summarize(list) }
        end
      end

      def summarize(list)
        ok = list.reject { |m| m[:failed] }
        {
          rps: Stats.median(ok.map { |m| m[:requests_per_sec] }), p50: Stats.median(ok.map { |m| m[:latency_ms][:p50] }),
          p99: Stats.median(ok.map { |m| m[:latency_ms][:p99] }), max: Stats.median(ok.map { |m| m[:latency_ms][:max] }),
          errors: ok.sum { |m| m[:errors].values.sum }, timeouts: ok.sum { |m| m[:errors][:timeout] },
          held: Stats.median(ok.map { |m| m.dig(:attacker, :max_connected) }),
          fds: Stats.median(ok.map { |m| m[:server_fds_during]&.first }), base_fds: Stats.median(ok.map { |m| m[:baseline_fds] }),
          drain: ok.map { |m| m[:drain_seconds] }, rounds: ok.size,
          alive: ok.all? { |m| m.fetch(:server_alive, true) }
        }
      end

      def headline(record)
        parts = figures(record).map do |name, cells|
          ratios = ATTACKS.keys.map { |a| F.times(cells[a][:rps], cells["none"][:rps]).delete("×") }
          "#{name} #{ratios.join('/')}×"
        end
        "normal req/s under slowloris/slow body/slow read ÷ without: #{parts.join('; ')}"
      end

      def markdown(record, json_name, figs)
        attacks = ATTACKS.map { |n, a| "- **#{n}** (`slowhttptest #{a[:flag]}`): #{a[:what]}" }.join("\n")
        m0 = record[:measurements].find { |m| m[:attacks] }
        conns = m0 ? m0[:attack_connections] : "?"
        rows = figs.flat_map do |name, cells|
          base = cells["none"]
          cells.map do |attack, c|
            none = c[:rps].to_f.zero? # wrk got no answer at all during the attack
            ms = ->(v) { none ? "no answer" : F.ms(v) }
            [attack == "none" ? "**#{name}**" : "", attack, F.rps(c[:rps]), attack == "none" ? "1.00×" : F.times(c[:rps], base[:rps]),
             ms.call(c[:p50]), ms.call(c[:p99]), attack == "none" ? "1.00×" : (none ? "∞" : F.times(c[:p99], base[:p99])), ms.call(c[:max]),
             c[:errors], attack == "none" ? "–" : c[:held].to_i.to_s, (attack == "none" ? c[:base_fds] : c[:fds]).to_i.to_s,
             attack == "none" ? "–" : c[:drain].map { |d| d ? "#{d} s" : "> 30 s" }.join(", "), c[:rounds]]
          end
        end
        table = F.table(["server", "attack", "normal req/s", "× no attack", "p50 ms", "p99 ms", "p99 × no attack",
                         "max ms", "wrk socket errors", "attack conns held (slowhttptest)", "server fds", "fds back to baseline after", "rounds"], rows)
        wrk_lines = record[:measurements].reject { |m| m[:failed] }.flat_map { |m| [m[:wrk], *(m[:attacks] || {}).values.map { |a| a[:slowhttptest] }] }
        attack_rows = [["Attack", "#{conns} connections per attack (slowhttptest #{m0&.dig(:slowhttptest_version)}), opened at #{m0&.dig(:attack_rate)}/s, bounded by `-l`; wrk starts once they are open"],
                       ["Normal clients", "wrk -c #{record[:settings][:connections].join(',')} on GET / (hello) for #{m0&.dig(:wrk_seconds)} s, without and then with each attack"]]
        [P.title(record, json_name), P.run_table(record, P.load_rows(record) + attack_rows),
         "## Attacks\n\n#{attacks}", "## Normal clients without and with each attack\n\n#{table}",
         notes, P.failures(record), P.commands(record, wrk_lines)].compact.join("\n\n") << "\n"
      end

      def notes
        <<~MD.chomp
          ## How to read this

          - `× no attack` divides by the same server's figure without an attack in the same start (same process, warm).
          - `attack conns held`: the most connections slowhttptest saw open at once (from its CSV). A server that
            drops attack connections early shows fewer; one that holds them all shows the full count.
          - `server fds`: descriptors open in the server's process tree once the attack has ramped up (the
            baseline before any attack is in the JSON, `baseline_fds`).
          - `wrk socket errors` includes timeouts (wrk `--timeout 5s`). `no answer`: wrk received no response at all during
            its run (its connections were accepted by the kernel, or not at all, and never served), which wrk does not
            count as an error.
          - wrk shares the 2 cores with the server and with slowhttptest.
        MD
      end

      def chart(record, figs)
        names = %w[none] + ATTACKS.keys
        chart = P.chart(record, "Slow clients: normal traffic under attack", "#{record[:machine][:nproc]} cores shared with wrk and slowhttptest · 1 process",
                        y_label: "median of the rounds", x_label: "attack running beside the normal traffic (no bar: no answer at all)")
        series = figs.map { |name, cells| { name: name, color: Bench::Report::Chart::COLORS[name], values: names.map { |n| cells[n][:rps] } } }
        chart.panel("Throughput of normal clients (wrk, GET /)", groups: names, series: series)
        series99 = figs.map { |name, cells| { name: name, color: Bench::Report::Chart::COLORS[name], values: names.map { |n| cells[n][:rps].to_f.zero? ? nil : cells[n][:p99] } } }
        chart.panel("p99 latency of normal clients, ms (lower is better)", groups: names, series: series99)
        chart.render
      end
    end
  end
end

Bench::Scenario.define(
  name: "slow_clients",
  title: "Slow clients (slowloris, slow body, slow read)",
  description: "Normal clients (wrk, GET /, keep-alive) measured alone, then beside each of three slowhttptest " \
               "attacks on the same process: slowloris (heads never finished), slow body (POST body trickled) and " \
               "slow read (a 1 MiB response read a few bytes at a time through a tiny window).",
  goal: "Normal clients' p99 latency barely moves and their throughput holds under each attack " \
        "(Puma's reactor protects threads from slow heads, not slow reads).",
  app: "slow_clients.ru",
  path: "/",
  connections: [16],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads spindle-fibers puma],
  trial: Bench::SlowClients::Trial,
  report: Bench::SlowClients::Report,
  # Three attacks of ~6 s each per start (the trial's quick size: 100 attack
  # connections, 2 s of wrk): one round, two servers.
  quick: { servers: %w[spindle-threads puma], rounds: 1, budget_s: 75 }
)
