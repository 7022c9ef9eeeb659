# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/refork_servers"

module Bench
  # Issue 4, "What must be shown" #2 (the description: below says how):
  # Spindle, Puma `fork_worker` and Pitchfork, interleaved over rounds.
  class ReforkThroughput < CustomScenario
    SERVERS = ReforkServers::SERVERS
    WORKERS = 2
    THREADS = 5
    CONNECTIONS = 16
    TARGET = 0.95
    COLORS = { "spindle" => "#3182bd", "puma" => "#e6550d", "pitchfork" => "#756bb1" }.freeze

    def initialize(scenario, settings)
      super
      @window = settings.quick ? 1 : 2
      @windows = settings.quick ? 3 : 5
      @rounds = settings.quick ? 1 : settings.rounds
      @names = picked(SERVERS.keys)
    end

    private

    def trials
      { runs: (1..@rounds).to_a.product(@names).map do |round, name|
        trial("#{name} round #{round}", { server: name, round: round }) { one(name, round) }
      end }
    end

    def settings_record
      { workers: WORKERS, threads_per_process: THREADS, connections: CONNECTIONS, window_s: @window,
        windows_before: @windows, windows_after: @windows, rounds: @rounds, processes: [WORKERS], target: TARGET }
    end

    def servers_record = ReforkServers.servers_record(@names)

    def one(name, round)
      target = Scenario.new(name: "refork-rps", app: "hello.ru", path: "/", expect_body: "Hello World", env: nil)
      server = ReforkServers.start(name, "refork-rps", target, workers: WORKERS, threads: THREADS)
      url = server.launch.url("/")
      Memory.wrk_run(url, connections: CONNECTIONS, duration: @window) # warm-up, discarded
      old_pids = ReforkServers.workers(name, server).map { |w| w[:pid] }
      clock0 = Child.now
      windows = Array.new(@windows) { window(url, :before, clock0) }
      refork_at = Child.now - clock0
      ReforkServers.trigger(name, server)
      watcher = Thread.new { watch(name, server, old_pids, clock0) }
      windows += Array.new(@windows) { window(url, :after, clock0) }
      record(name, round, server, windows, refork_at, watcher.value)
    ensure
      watcher&.kill
      server&.stop
    end

    def record(name, round, server, windows, refork_at, complete_at)
      rate = ->(ws) { ws.sum { |w| w[:requests].to_i } / ws.sum { |w| w[:seconds] } }
      before, after = windows.partition { |w| w[:phase] == :before }
      settled = complete_at ? after.select { |w| w[:start] >= complete_at } : []
      r = { command: server.command_line, configs: server.launch.written,
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
      start = Child.now - clock0
      w = Memory.wrk_run(url, connections: CONNECTIONS, duration: @window)
      w.merge(phase: phase, start: start.round(3), seconds: (Child.now - clock0 - start).round(3), rps: w[:requests_per_sec])
    end

    # Seconds (since clock0) when the new generation was complete, or nil.
    def watch(name, server, old_pids, clock0)
      Child.wait_for(@windows * @window + 10) do
        ReforkServers.generation_complete?(name, server, old_pids, WORKERS) && Child.now - clock0
      end
    rescue StandardError
      nil
    end

    # ---- report ---------------------------------------------------------

    def self.by_server(record) = ok(record).group_by { |r| r[:server] }
    def self.med(runs, key) = Stats.median(runs.map { |r| r[key] })

    # The median of each round's after ÷ before, as the page's table gives it.
    def self.ratio(runs) = Stats.median(runs.map { |r| r[:after_rps] / r[:before_rps] })

    def self.headline(record)
      parts = by_server(record).map { |name, runs| format("%s %.2f×", name, ratio(runs)) }
      "after/before refork: #{parts.join(', ')} (target ≥ 0.95×)"
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      firsts = ok(record).uniq { |r| r[:server] }
      configs = firsts.flat_map { |r| (r[:configs] || {}).map { |path, text| "`#{path}`:\n\n```ruby\n#{text.chomp}\n```" } }
      P.page(P.title(record, json_name, goal_from: "issue 4"),
             P.run_table(record, [
               ["Load", "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, keep-alive, sharing the #{m[:nproc]} cores; " \
                        "#{s[:windows_before]} windows of #{s[:window_s]} s before the refork, #{s[:windows_after]} after, after a discarded warm-up window"],
               ["Rounds", "#{s[:rounds]}, servers interleaved within each round; figures are medians over rounds"],
               ["Refork", record[:servers].map { |v| "#{v[:name]}: #{v[:refork]}" }.join("; ")]
             ]),
             "## Result\n\n#{result_table(record)}\n\n#{format(NOTES, window: s[:window_s])}",
             "## Versions\n\n#{record[:servers].map { |v| "- #{v[:name]}: #{v[:version]}" }.join("\n")}",
             P.listing("Failed", P.failed(record[:runs]) { |r| "#{r[:server]} round #{r[:round]}" }),
             "## Commands\n\n#{P.sh(firsts.map { |r| "# #{r[:server]}\n#{r[:command]}" } + ["#{firsts.first&.dig(:wrk)}   # each window"])}",
             *configs)
    end

    def self.result_table(record)
      rows = by_server(record).map do |name, runs|
        ratios = runs.map { |r| r[:after_rps] / r[:before_rps] }
        settled = runs.map { |r| r[:settled_after_rps] && r[:settled_after_rps] / r[:before_rps] }.compact
        transition = runs.map { |r| r[:generation_complete_at_s] && r[:generation_complete_at_s] - r[:refork_at_s] }.compact
        errors = runs.flat_map { |r| r[:socket_errors] }.uniq.join("; ")
        [name, F.rps(med(runs, :before_rps)), F.rps(med(runs, :after_rps)), format("**%.2f×** (%.2f–%.2f)", ratio(runs), ratios.min, ratios.max),
         F.rps(med(runs, :first_after_rps)), settled.empty? ? "–" : format("%.2f×", Stats.median(settled)),
         transition.empty? ? "not seen" : format("%.1f s", Stats.median(transition)),
         runs.sum { |r| r[:non_2xx].to_i }, errors.empty? ? "0" : errors, ratio(runs) >= TARGET ? "**yes**" : "no", runs.size]
      end
      F.table(["server", "before (req/s)", "after (req/s)", "after ÷ before (min–max)", "first window after (req/s)",
               "after, once the new generation serves", "refork → new generation complete", "non-2xx", "socket errors",
               "≥ 0.95×", "rounds"], rows)
    end

    def self.chart(record)
      s = record[:settings]
      chart = P.chart(record, "Requests per second around a refork",
                      "hello app, #{s[:workers]} workers, wrk -c #{s[:connections]} · one point per #{s[:window_s]} s window · round 1 of #{s[:rounds]}",
                      kind: SvgChart::Lines, y_label: "requests/s", x_label: "seconds since the first window (dashed line: refork command)")
      by_server(record).each do |name, runs|
        r = runs.first
        markers = [{ x: r[:refork_at_s], label: "refork" }]
        markers << { x: r[:generation_complete_at_s], label: "new generation complete" } if r[:generation_complete_at_s]
        points = r[:windows].map { |w| [w[:start] + w[:seconds] / 2, w[:rps].to_f] }
        chart.panel(name, series: [{ name: name, color: COLORS[name], points: points }], markers: markers)
      end
      chart.render
    end

    NOTES = <<~MD.chomp
      - "after" is every window from the refork command on; "first window after" is the %<window>s s window that starts
        with it. "once the new generation serves": only the windows that started after every worker had been replaced.
      - Pitchfork closes the connection after every response (no keep-alive), so its absolute rate is not comparable;
        its ratio is.
    MD
  end
end

Bench::Scenario.define(
  name: "refork-rps",
  title: "Refork: requests per second just before and just after",
  description: "The hello app (`bench/apps/hello.ru`), 2 workers (5 threads each where threads apply), one keep-alive " \
               "load (`wrk -t 1 -c 16`) run as back-to-back windows; the refork is triggered as the first window after it " \
               "starts. 'after' covers every window from the refork on, the transition included.",
  goal: "Requests per second after a refork ≥ 0.95× before (Puma once lost 5× here).",
  app: "hello.ru",
  path: "/",
  processes: [2],
  connections: [16],
  custom: Bench::ReforkThroughput,
  quick: { servers: %w[spindle puma] } # ReforkThroughput's own names; 1 round of 3 + 3 windows of 1 s
)
