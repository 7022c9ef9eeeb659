# frozen_string_literal: true

require "time"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/deadline"
require_relative "../lib/bench/refork_servers"
require_relative "../lib/bench/machine"
require_relative "../lib/bench/versions"
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/format"
require_relative "../lib/svg_chart"

module Bench
  # Issue 4, "What must be shown" #2: requests per second just before and just
  # after a refork. The hello app, 2 workers (the machine's 2 cores); wrk runs
  # back-to-back windows of W seconds on one keep-alive load (-c 16): K windows
  # before, then the refork is triggered as the first "after" window starts,
  # then K windows after. Spindle (spindlectl refork), Puma fork_worker
  # (SIGURG) and Pitchfork (USR2), interleaved over rounds.
  class ReforkThroughput
    F = Report::Format
    WORKERS = 2
    THREADS = 5
    CONNECTIONS = 16
    TARGET = 0.95
    COLORS = { "spindle" => "#3182bd", "puma" => "#e6550d", "pitchfork" => "#756bb1" }.freeze
    SERVERS = {
      "spindle" => { runtime: :spindle, version: -> { Versions.spindle }, refork: "bin/spindlectl refork (control socket)" },
      "puma" => { runtime: :peers, version: -> { "#{Versions.gem('puma')} (fork_worker)" }, refork: "SIGURG to the master (= pumactl refork)" },
      "pitchfork" => { runtime: :peers, version: -> { Versions.gem("pitchfork") }, refork: "SIGUSR2 to the monitor" }
    }.freeze

    def self.run(settings) = new(settings).run

    def initialize(settings)
      @settings = settings
      @window = settings.quick ? 1 : 2
      @windows = settings.quick ? 3 : 5
      @rounds = settings.quick ? 1 : settings.rounds
      @names = settings.servers ? SERVERS.keys.select { |n| settings.servers.any? { |p| File.fnmatch(p, n) } } : SERVERS.keys
    end

    def run
      started = Time.now
      source = Versions.spindle_source
      runs = []
      @rounds.times do |round|
        @names.each { |name| runs << (skipped(name, round + 1) || one(name, round + 1)) }
      end
      {
        scenario: { name: "refork-rps", title: TITLE, description: DESCRIPTION, goal: GOAL, app: "bench/apps/hello.ru", path: "/" },
        started_at: started.iso8601, finished_at: Time.now.iso8601, machine: Machine.describe,
        settings: { quick: @settings.quick, workers: WORKERS, threads_per_process: THREADS, connections: CONNECTIONS,
                    window_s: @window, windows_before: @windows, windows_after: @windows, rounds: @rounds,
                    processes: [WORKERS], target: TARGET },
        load_generator: { tool: "wrk #{Versions.command(%w[wrk -v], /wrk (\S+)/)}", threads: 1, shares_cores: true },
        servers: @names.map { |n| { name: n, family: n == "spindle" ? "spindle" : "peer", version: safe(SERVERS[n][:version]), refork: SERVERS[n][:refork] } },
        runs: runs, measurements: [],
        spindle_source: { at_start: source, at_end: Versions.spindle_source, changed: Versions.spindle_source != source }
      }
    end

    private

    # Past the run's deadline (or the --quick budget) nothing new starts.
    def skipped(name, round)
      Deadline.skipped(@settings, "refork-rps #{name} round #{round}", { server: name, round: round })
    end

    def safe(version)
      version.call
    rescue StandardError => e
      "unknown (#{e.message})"
    end

    def one(name, round)
      target = Memory::Target.new(name: "refork-rps", app: "hello.ru", path: "/", expect_body: "Hello World", env: nil)
      server = Memory.start(name: "refork-rps-#{name}", runtime: SERVERS[name][:runtime], target: target,
                            processes: WORKERS, threads: THREADS) { |l| command(name, l) }
      url = server.launch.url("/")
      Memory.wrk_run(url, connections: CONNECTIONS, duration: @window) # warm-up, discarded
      old = worker_pids(name, server)
      windows = []
      clock0 = Memory.now
      @windows.times { windows << window(url, :before, clock0) }
      refork_at = Memory.now - clock0
      trigger(name, server)
      watcher = Thread.new { watch(name, server, old, clock0) }
      @windows.times { windows << window(url, :after, clock0) }
      complete_at = watcher.value
      record(name, round, server, windows, refork_at, complete_at)
    rescue StandardError, ServerProcess::StartFailed => e
      Log.warn("refork-rps #{name} round #{round}: #{e.class}: #{e.message}")
      { server: name, round: round, failed: "#{e.class}: #{e.message}" }
    ensure
      watcher&.kill
      server&.stop
    end

    def record(name, round, server, windows, refork_at, complete_at)
      rate = ->(ws) { ws.sum { |w| w[:requests].to_i } / ws.sum { |w| w[:seconds] } }
      before = windows.select { |w| w[:phase] == :before }
      after = windows.select { |w| w[:phase] == :after }
      settled = complete_at ? after.select { |w| w[:start] >= complete_at } : []
      r = { server: name, round: round, command: server.command_line, configs: server.launch.written,
            before_rps: rate.call(before).round(1), after_rps: rate.call(after).round(1),
            first_after_rps: after.first[:rps], settled_after_rps: settled.empty? ? nil : rate.call(settled).round(1),
            refork_at_s: refork_at.round(2), generation_complete_at_s: complete_at&.round(2),
            socket_errors: windows.map { |w| w[:socket_errors] }.compact, non_2xx: windows.sum { |w| w[:non_2xx] },
            windows: windows, wrk: windows.first[:wrk] }
      Log.info(format("refork-rps round %d %-9s before %8.0f req/s  after %8.0f (%.2f×)  first window %8.0f  new generation complete at +%s s",
                      round, name, r[:before_rps], r[:after_rps], r[:after_rps] / r[:before_rps], r[:first_after_rps],
                      complete_at ? (complete_at - refork_at).round(1) : "never"))
      r
    end

    def window(url, phase, clock0)
      start = Memory.now - clock0
      w = Memory.wrk_run(url, connections: CONNECTIONS, duration: @window)
      seconds = Memory.now - clock0 - start
      w.merge(phase: phase, start: start.round(3), seconds: seconds.round(3), rps: w[:requests_per_sec])
    end

    def command(name, launch)
      @control = ReforkServers.control_path(launch)
      ReforkServers.command(name, launch, workers: WORKERS, threads: THREADS)
    end

    def trigger(name, server) = ReforkServers.trigger(name, server, @control)

    def worker_pids(name, server)
      if name == "spindle"
        Memory.control(@control, "stats")["workers"].select { |w| w["state"] == "serving" }.map { |w| [w["pid"], w["generation"]] }
      else
        Memory.tree(server.pid).select { |p| p[:cmd].match?(/cluster worker \d+|worker\[\d+\]/) }
              .map { |p| [p[:pid], p[:cmd][/gen:(\d+)/, 1].to_i] }
      end
    end

    # Seconds (since clock0) when the new generation was complete: every
    # worker replaced (Puma keeps worker 0, its template), or nil.
    def watch(name, server, old, clock0)
      old_pids = old.map(&:first)
      Memory.wait_for(@windows * @window + 10, every: 0.25) do
        ws = worker_pids(name, server)
        done = ws.size == WORKERS &&
               case name
               when "spindle" then ws.all? { |_, g| g.to_i >= 1 } && (ws.map(&:first) & old_pids).empty?
               when "puma" then (ws.map(&:first) & old_pids).size <= 1
               when "pitchfork" then ws.all? { |_, g| g >= 1 }
               end
        done && Memory.now - clock0
      end
    rescue StandardError
      nil
    end

    TITLE = "Refork: requests per second just before and just after"
    DESCRIPTION = "The hello app (`bench/apps/hello.ru`), 2 workers (5 threads each where threads apply), one keep-alive " \
                  "load (`wrk -t 1 -c 16`) run as back-to-back windows; the refork is triggered as the first window after it " \
                  "starts. 'after' covers every window from the refork on, the transition included."
    GOAL = "Requests per second after a refork ≥ 0.95× before (Puma once lost 5× here)."

    # ---- report ---------------------------------------------------------

    def self.ok(record) = record[:runs].reject { |r| r[:failed] }

    def self.by_server(record) = ok(record).group_by { |r| r[:server] }

    def self.med(runs, key) = Stats.median(runs.map { |r| r[key] }.compact)

    # The median of each round's after ÷ before, as the page's table gives it.
    def self.ratio(runs) = Stats.median(runs.map { |r| r[:after_rps] / r[:before_rps] })

    def self.headline(record)
      parts = by_server(record).map { |name, runs| format("%s %.2f×", name, ratio(runs)) }
      "after/before refork: #{parts.join(', ')} (target ≥ 0.95×)"
    end

    def self.render(record, json_name) = [markdown(record, json_name), chart(record)]

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      rows = by_server(record).map do |name, runs|
        ratios = runs.map { |r| r[:after_rps] / r[:before_rps] }
        settled = runs.map { |r| r[:settled_after_rps] && r[:settled_after_rps] / r[:before_rps] }.compact
        transition = runs.map { |r| r[:generation_complete_at_s] && r[:generation_complete_at_s] - r[:refork_at_s] }.compact
        ratio = ratio(runs)
        [name, F.rps(med(runs, :before_rps)), F.rps(med(runs, :after_rps)), format("**%.2f×** (%.2f–%.2f)", ratio, ratios.min, ratios.max),
         F.rps(med(runs, :first_after_rps)), settled.empty? ? "–" : format("%.2f×", Stats.median(settled)),
         transition.empty? ? "not seen" : format("%.1f s", Stats.median(transition)),
         runs.sum { |r| r[:non_2xx].to_i }, runs.flat_map { |r| r[:socket_errors] }.uniq.join("; ").then { |e| e.empty? ? "0" : e },
         ratio >= TARGET ? "**yes**" : "no", runs.size]
      end
      failed = record[:runs].select { |r| r[:failed] }.map { |r| "- #{r[:server]} round #{r[:round]}: #{r[:failed]}" }
      commands = ok(record).uniq { |r| r[:server] }.map { |r| "# #{r[:server]}\n#{r[:command]}" }
      configs = ok(record).uniq { |r| r[:server] }.flat_map { |r| (r[:configs] || {}).map { |path, text| "`#{path}`:\n\n```ruby\n#{text.chomp}\n```" } }
      <<~MD
        # #{record[:scenario][:title]} — `bench/run refork-rps`

        > Generated by `bench/run refork-rps` from [data/#{json_name}](data/#{json_name}); do not edit by hand
        > (`bench/run refork-rps --render` redraws from the newest data).#{"\n>\n> **Quick run** (`--quick`): a smoke test, not a result." if s[:quick]}

        #{record[:scenario][:description]}

        **What Spindle must show** (issue 4): #{record[:scenario][:goal]}

        ![refork-rps chart](refork-rps.svg)

        ## Run

        #{F.table(%w[what value], [
          ['Date', "#{record[:started_at]} to #{record[:finished_at]}"],
          ['Machine', "#{m[:nproc]} cores (#{m[:cpu]}), #{m[:memory_gib]} GiB, #{m[:kernel]}, #{m[:os]}"],
          ['Ruby', "#{m[:ruby]}; YJIT off"],
          ['Load', "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, keep-alive, sharing the #{m[:nproc]} cores; " \
                   "#{s[:windows_before]} windows of #{s[:window_s]} s before the refork, #{s[:windows_after]} after, after a discarded warm-up window"],
          ['Rounds', "#{s[:rounds]}, servers interleaved within each round; figures are medians over rounds"],
          ['Refork', record[:servers].map { |v| "#{v[:name]}: #{v[:refork]}" }.join("; ")],
          ['Spindle source', "lib/ext/bin digest #{record.dig(:spindle_source, :at_start)}#{record.dig(:spindle_source, :changed) ? ' (**changed during the run**)' : ', unchanged during the run'}"]
        ])}

        ## Result

        #{F.table(['server', 'before (req/s)', 'after (req/s)', 'after ÷ before (min–max)', 'first window after (req/s)',
                   'after, once the new generation serves', 'refork → new generation complete', 'non-2xx', 'socket errors',
                   '≥ 0.95×', 'rounds'], rows)}

        - "after" is every window from the refork command on; "first window after" is the #{s[:window_s]} s window that starts
          with it. "once the new generation serves": only the windows that started after every worker had been replaced.
        - Pitchfork closes the connection after every response (no keep-alive), so its absolute rate is not comparable;
          its ratio is.

        ## Versions

        #{record[:servers].map { |v| "- #{v[:name]}: #{v[:version]}" }.join("\n")}
        #{"\n## Failed\n\n#{failed.join("\n")}\n" unless failed.empty?}
        ## Commands

        ```sh
        #{commands.join("\n")}
        #{ok(record).first&.dig(:wrk)}   # each window
        ```

        #{configs.join("\n\n")}
      MD
    end

    def self.chart(record)
      s = record[:settings]
      chart = SvgChart::Lines.new(title: "Requests per second around a refork (bench/run refork-rps)",
                               subtitle: "#{record[:started_at][0, 10]} · hello app, #{s[:workers]} workers, wrk -c #{s[:connections]} · " \
                                         "one point per #{s[:window_s]} s window · round 1 of #{s[:rounds]}#{' · QUICK' if s[:quick]}",
                               y_label: "requests/s", x_label: "seconds since the first window (dashed line: refork command)")
      by_server(record).each do |name, runs|
        r = runs.first
        markers = [{ x: r[:refork_at_s], label: "refork" }]
        markers << { x: r[:generation_complete_at_s], label: "new generation complete" } if r[:generation_complete_at_s]
        chart.panel(name, series: [{ name: name, color: COLORS[name], points: r[:windows].map { |w| [w[:start] + w[:seconds] / 2, w[:rps].to_f] } }],
                          markers: markers)
      end
      chart.render
    end
  end
end

Bench::Scenario.define(
  name: "refork-rps",
  title: Bench::ReforkThroughput::TITLE,
  description: Bench::ReforkThroughput::DESCRIPTION,
  goal: Bench::ReforkThroughput::GOAL,
  app: "hello.ru",
  path: "/",
  processes: [2],
  connections: [16],
  custom: Bench::ReforkThroughput,
  report: Bench::ReforkThroughput,
  quick: { servers: %w[spindle puma] } # ReforkThroughput's own names; 1 round of 3 + 3 windows of 1 s
)
