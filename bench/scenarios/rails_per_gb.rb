# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/refork_servers"
require_relative "../lib/bench/app_db"

module Bench
  # Issue 16, throughput per GB: the Rails app (GET /posts) on 4 workers,
  # each server set up for reforking as the refork scenarios set it up
  # (Bench::ReforkServers: Spindle with a control socket and --lean-heap,
  # Puma fork_worker, Pitchfork), reforked once its workers are warm; once
  # the new generation is complete, a measured wrk run, then the PSS of every
  # process (/proc/PID/smaps_rollup). Figure: req/s ÷ total PSS in GiB.
  # Servers interleaved over rounds, never two at a time. "spindle" is the
  # threads engine, as in the refork scenarios; spindle-blocking and
  # spindle-fibers are the same setup on the engines docs/ENGINES.md
  # recommends for a page like this one.
  class RailsPerGb < CustomScenario
    SERVERS = ReforkServers::ALL
    WORKERS = 4
    QUICK_WORKERS = 2 # --quick: a smoke run, half the Rails boots
    THREADS = 5
    CONNECTIONS = 16
    TARGETS = { "puma" => 1.3, "pitchfork" => 1.0 }.freeze # Spindle's req/s per GiB ÷ theirs, at least
    REFERENCES = %w[puma-jemalloc].freeze # ratios shown without a target: Puma on Spindle's allocator
    WARM_HEADERS = ["Connection: close"].freeze # every warm-up request a new accept: every worker gets some
    GENERATION_WAIT = 120 # seconds for the new generation, with warm-up bursts meanwhile

    def initialize(scenario, settings)
      super
      @rounds = settings.quick ? 1 : settings.rounds
      @workers = settings.quick ? QUICK_WORKERS : WORKERS
      @duration = settings.duration
      @names = picked(SERVERS.keys.sort_by { |n| ReforkServers.spindle?(n) ? 0 : 1 })
    end

    private

    def trials
      { runs: (1..@rounds).to_a.product(@names).map do |round, name|
        trial("#{name} round #{round}", { server: name, round: round }) { one(name) }
      end }
    end

    def settings_record
      { workers: @workers, threads_per_process: THREADS, connections: CONNECTIONS, duration_s: @duration, rounds: @rounds,
        processes: [@workers], path: "/posts", targets: TARGETS }
    end

    # Versions from the bundle the servers run under.
    def servers_record = Versions.using(Paths::APPS_GEMFILE) { ReforkServers.servers_record(@names) }

    def target
      Scenario.new(name: "rails-per-gb", app: "../../test/apps/rails/config.ru", path: "/posts", expect_body: nil,
                   gemfile: Paths::APPS_GEMFILE, env: AppDb.env)
    end

    def one(name)
      server = ReforkServers.start(name, "rails-per-gb", target, workers: @workers, threads: THREADS)
      url = server.launch.url("/posts")
      old = ReforkServers.workers(name, server).map { |w| w[:pid] }
      Memory.wrk_run(url, connections: CONNECTIONS, duration: 2, headers: WARM_HEADERS, timeout: 30)
      ReforkServers.trigger(name, server)
      complete = Child.wait_for(GENERATION_WAIT, every: 0) do
        ReforkServers.generation_complete?(name, server, old, @workers) ||
          (Memory.wrk_run(url, connections: CONNECTIONS, duration: 1, headers: WARM_HEADERS, timeout: 30) && false)
      end
      measure(name, server, url, complete ? true : false)
    ensure
      server&.stop
    end

    def measure(name, server, url, reforked)
      Memory.wrk_run(url, connections: CONNECTIONS, duration: 1) # warm the new generation, discarded
      run = Memory.wrk_run(url, connections: CONNECTIONS, duration: @duration)
      procs = ReforkServers.processes(name, server).map { |p| p.merge(memory: Memory.rollup(p[:pid])) }
      pss = procs.sum { |p| p.dig(:memory, :pss).to_i }
      per_gib = run[:requests_per_sec] / (pss / 1024.0**3)
      Log.info(format("rails-per-gb %-9s %7.1f req/s  PSS %7.1f MB  %7.1f req/s per GiB%s", name, run[:requests_per_sec],
                      Memory.mb(pss), per_gib, reforked ? "" : "  (new generation not complete)"))
      { command: server.command_line, configs: server.launch.written, reforked: reforked, wrk: run,
        requests_per_sec: run[:requests_per_sec], total_pss: pss, per_gib: per_gib.round(1),
        processes: procs.map { |p| p.slice(:pid, :role, :generation, :cmd).merge(pss: p.dig(:memory, :pss)) } }
    end

    # ---- report ---------------------------------------------------------

    def self.medians(record)
      ok(record).group_by { |r| r[:server] }.to_h do |name, runs|
        [name, %i[requests_per_sec total_pss per_gib].to_h { |k| [k, Stats.median(runs.map { |r| r[k] })] }
                                                 .merge(rounds: runs.size, reforked: runs.all? { |r| r[:reforked] })]
      end
    end

    # Spindle's rows, best first: [name, medians].
    def self.spindle_rows(m) = m.select { |name, _| ReforkServers.spindle?(name) }.sort_by { |_, v| -v[:per_gib] }

    # [spindle name, peer, ratio, target] for each Spindle row and peer target.
    def self.ratios(m)
      spindle_rows(m).flat_map do |name, v|
        TARGETS.merge(REFERENCES.to_h { |peer| [peer, nil] })
               .filter_map { |peer, goal| m[peer] && [name, peer, v[:per_gib] / m[peer][:per_gib], goal] }
      end
    end

    def self.verdict(ratio, goal)
      return "no target: the same allocator as Spindle's default" unless goal

      ratio >= goal ? "**met** (≥ #{goal}×)" : "not met (≥ #{goal}×)"
    end

    def self.label(name) = name == "spindle" ? "spindle (threads)" : name

    # "spindle, spindle-fibers: spindlectl; puma: SIGURG": servers grouped by how they refork.
    def self.refork_line(servers)
      servers.group_by { |v| v[:refork] }.map { |how, same| "#{same.map { |v| v[:name] }.join(', ')}: #{how}" }.join("; ")
    end

    def self.headline(record)
      m = medians(record)
      parts = m.map { |name, v| format("%s %.0f", label(name), v[:per_gib]) }
      best = spindle_rows(m).first&.first
      ratios = ratios(m).select { |name, *| name == best }.map { |_, peer, r, _| format("%.2f× %s", r, peer) }
      "req/s per GiB of PSS, #{record[:settings][:workers]} Rails workers after a refork: #{parts.join(', ')}" \
        "#{" (Spindle's best, #{label(best)}: #{ratios.join(', ')})" if ratios.any?}"
    end

    def self.markdown(record, json_name)
      m = medians(record)
      rows = m.map do |name, v|
        [label(name), F.rps(v[:requests_per_sec]), mb(v[:total_pss]), format("**%.1f**", v[:per_gib]),
         v[:reforked] ? "yes" : "**no** (see the log)", v[:rounds]]
      end
      targets = ratios(m).map do |name, peer, r, goal|
        [label(name), peer, format("%.2f×", r), verdict(r, goal)]
      end
      s = record[:settings]
      P.page(P.title(record, json_name, goal_from: "issue 16"),
             P.run_table(record, [["App", "test/apps/rails, GET #{s[:path]}, #{s[:workers]} workers × #{s[:threads_per_process]} threads where threads apply"],
                                  ["Load", "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, #{s[:duration_s]} s, keep-alive"],
                                  ["Refork", refork_line(record[:servers])]]),
             "## Result\n\n#{F.table(['server', 'req/s', 'total PSS (MB)', 'req/s per GiB', 'new generation complete', 'rounds'], rows)}",
             "## Targets\n\n#{F.table(['Spindle', 'against', 'req/s per GiB ratio', 'target'], targets)}",
             "PSS is summed over every process of the server (master, workers, mold), measured right after the run; " \
             "each shared page is divided among the processes that map it, so the sum is what the server costs. " \
             "Spindle runs on its default allocator, jemalloc with narenas:2 (bench/run installs libjemalloc2); " \
             "puma-jemalloc is Puma on that same allocator, the others on glibc.",
             "## Versions\n\n#{record[:servers].map { |v| "- #{label(v[:name])}: #{v[:version]}" }.join("\n")}",
             P.listing("Failed", P.failed(record[:runs]) { |r| "#{r[:server]} round #{r[:round]}" }),
             "## Commands\n\n#{P.sh(ok(record).uniq { |r| r[:server] }.map { |r| "# #{r[:server]}\n#{r[:command]}" })}")
    end

    def self.chart(record)
      m = medians(record)
      chart = P.chart(record, "Rails: requests per second per GiB of PSS",
                      "#{record[:settings][:workers]} workers after a refork · medians of rounds",
                      y_label: "req/s per GiB", x_label: "server")
      chart.panel("higher is better", groups: m.keys.map { |n| label(n) },
                                      series: [{ name: "req/s per GiB", color: "#3182bd", values: m.values.map { |v| v[:per_gib].round },
                                                 hatched: m.keys.map { false } }]).render
    end
  end
end

Bench::Scenario.define(
  name: "rails-per-gb",
  title: "Rails: requests per second per GiB of memory, 4 workers with refork",
  description: "test/apps/rails (GET /posts, PostgreSQL, production), 4 workers: Spindle reforked by spindlectl, " \
               "Puma fork_worker reforked by SIGURG, Pitchfork by USR2; once the new generation serves, wrk -c 16, " \
               "then total PSS of every process. Figure: req/s ÷ total PSS.",
  goal: "≥ 1.3× Puma fork_worker and ≥ Pitchfork (issue 16).",
  app: "../../test/apps/rails/config.ru",
  path: "/posts",
  processes: [4],
  connections: [16],
  gemfile: Bench::Paths::APPS_GEMFILE,
  custom: Bench::RailsPerGb,
  quick: { servers: %w[spindle puma], budget_s: 150 }
)
