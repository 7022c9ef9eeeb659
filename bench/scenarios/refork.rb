# frozen_string_literal: true

require "fileutils"
require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/refork_servers"

module Bench
  # Issue 4, "What must be shown" #1 (the description: below says how):
  # Spindle, Puma `fork_worker` and Pitchfork, one after another.
  class ReforkMemory < CustomScenario
    SERVERS = ReforkServers::SERVERS
    WORKERS = 8
    THREADS = 5
    BIG_FULL = 10_000_000
    TRAFFIC = 5 # seconds per wrk burst
    # --quick, a smoke run: 2 workers with 200,000 objects each, 1 s bursts,
    # Ruby's GC defaults only.
    QUICK = { workers: 2, big: 200_000, traffic: 1, variants: %w[defaults] }.freeze
    CONNECTIONS = 16
    HEADERS = ["Connection: close"].freeze # as in the PR: every request is a new accept, so every worker gets some
    TARGET = 0.75
    # Every server runs once as configured for reforking, with no GC
    # environment from the harness (the result; Spindle: --lean-heap), and once
    # with the same GC environment for all: after a fork, a worker's first GCs
    # insist on RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO (20 %) of a 10M-slot heap
    # being free and grow it by up to 80 % at a time, in new private pages; the
    # tuned variant shows how much of what stays private after a refork is that.
    # Its oldmalloc floor (64 MiB, Ruby's is 16) spares workers the major GCs
    # that copy the mark stack they share (docs/REFORKING.md). The same values
    # as Spindle's --lean-heap, so every server gets what Spindle gets.
    VARIANTS = {
      "defaults" => {},
      "gc-tuned" => { "RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.02", "RUBY_GC_HEAP_GROWTH_MAX_SLOTS" => "100000",
                      "RUBY_GC_OLDMALLOC_LIMIT" => "67108864" }
    }.freeze
    HOW = { "spindle" => "bin/spindlectl --control unix://… refork", "puma" => "kill -URG <master> (pumactl refork)",
            "pitchfork" => "kill -USR2 <monitor>" }.freeze

    def initialize(scenario, settings)
      super
      quick = settings.quick
      @workers = quick ? QUICK[:workers] : WORKERS
      @big = quick ? QUICK[:big] : BIG_FULL
      @traffic = quick ? QUICK[:traffic] : TRAFFIC
      @variants = quick ? VARIANTS.slice(*QUICK[:variants]) : VARIANTS
      @names = picked(SERVERS.keys)
    end

    private

    def trials
      { results: @variants.keys.product(@names).map do |variant, name|
        trial("#{name} #{variant}", { server: name, variant: variant }) { |result| measure_server(name, variant, result) }
      end }
    end

    def settings_record
      { workers: @workers, threads_per_process: THREADS, big_objects: @big, traffic_burst_s: @traffic,
        connections: CONNECTIONS, headers: HEADERS, processes: [@workers], connections_list: [CONNECTIONS],
        target_reduction: TARGET, variants: @variants,
        memory_estimate: "#{@big / 1_000_000}M objects × 40 B + #{@big * 8 / 1_000_000} MB array ≈ " \
                         "#{(@big * 48 / 1_000_000.0).round} MB per worker; × #{@workers} ≈ " \
                         "#{(@big * 48 * @workers / 1e9).round(1)} GB per server, servers one after another " \
                         "on #{Machine.memory_gib} GiB" }
    end

    def servers_record = ReforkServers.servers_record(@names)

    # Fills result as it goes: what was measured before a failure is kept.
    def measure_server(name, variant, result)
      marks = File.join(Paths::TMP, "refork-#{name}-marks")
      FileUtils.rm_rf(marks)
      FileUtils.mkdir_p(marks)
      target = Scenario.new(name: "refork", app: "refork.ru", path: "/ready", expect_body: "ready",
                                  env: -> { { "REFORK_BIG_N" => @big.to_s, "REFORK_MARKS" => marks }.merge(VARIANTS.fetch(variant)) })
      server = ReforkServers.start(name, "refork", target, workers: @workers, threads: THREADS, ready_timeout: 120)
      result.merge!(command: server.command_line, configs: server.launch.written)
      result.merge!(phase(name, server, marks, :before))
      ReforkServers.trigger(name, server)
      result[:refork] = { how: HOW[name], triggered_after_s: 0 }
      result.merge(phase(name, server, marks, :after, old: result[:before][:processes]))
    ensure
      server&.stop
    end

    # Traffic until every worker has served (and, before the refork, built
    # its $big), then one more burst; then the PSS of every process.
    def phase(name, server, marks, label, old: nil)
      mark = label == :before ? "built" : "seen"
      marked = ->(w) { File.exist?(File.join(marks, "#{mark}-#{w[:pid]}")) }
      old_pids = old&.select { |p| p[:role] == "worker" }&.map { |p| p[:pid] }
      bursts = 0
      ok = Child.wait_for(@settings.quick ? 30 : 240, every: 0) do
        ws = ReforkServers.workers(name, server)
        next true if ws.size == @workers && ws.all?(&marked) &&
                     (old_pids.nil? || ReforkServers.generation_complete?(name, server, old_pids, @workers))
        raise ServerProcess::StartFailed, "exited: #{server.death}" unless server.alive?

        burst(server)
        bursts += 1
        false
      end
      missing = ReforkServers.workers(name, server).reject(&marked).map { |w| w[:pid] }
      Log.warn("refork #{name} #{label}: not every worker #{mark} within the deadline: #{missing}") unless ok
      burst(server) # traffic after the last worker joined
      sleep 2 # let check-ins and lazy frees settle; not a readiness wait
      procs = ReforkServers.processes(name, server).map { |p| p.merge(memory: Memory.rollup(p[:pid])) }
      totals = totals(procs)
      Log.info(format("refork %-9s %-6s workers %d  PSS workers %7.1f MB  all %7.1f MB", name, label,
                      procs.count { |p| p[:role] == "worker" }, Memory.mb(totals[:workers_pss]), Memory.mb(totals[:all_pss])))
      { label => { processes: procs, bursts: bursts + 1, every_worker_served: ok ? true : false, missing: missing, totals: totals } }
    end

    def burst(server)
      Memory.wrk_run(server.launch.url("/"), connections: CONNECTIONS, duration: @traffic, headers: HEADERS, timeout: 60)
    end

    def totals(procs)
      sum = ->(roles, key) { procs.select { |p| roles.include?(p[:role]) }.sum { |p| p.dig(:memory, key).to_i } }
      { workers_pss: sum.call(%w[worker], :pss), workers_and_mold_pss: sum.call(%w[worker mold], :pss),
        all_pss: sum.call(%w[worker mold master other], :pss), workers_rss: sum.call(%w[worker], :rss),
        workers_uss: sum.call(%w[worker], :uss) }
    end

    # ---- report ---------------------------------------------------------

    def self.reduction(result, key)
      before = result.dig(:before, :totals, key).to_f
      after = result.dig(:after, :totals, key).to_f
      before.positive? && after.positive? ? 1 - after / before : nil
    end

    def self.headline(record)
      parts = record[:results].select { |r| r[:variant].nil? || r[:variant] == "defaults" }.map do |r|
        red = reduction(r, :workers_pss)
        red ? "#{r[:server]} −#{(red * 100).round}%" : "#{r[:server]} failed"
      end
      "total worker PSS after refork, Ruby's GC defaults: #{parts.join(', ')} (target ≥ 75 % lower)"
    end

    # A phase in which not every worker had built (before) or served (after)
    # compares different things: said in the row, not hidden.
    def self.notes(r)
      notes = []
      notes << "partly failed: #{r[:failed]}" if r[:failed]
      notes << "**not comparable**: before the refork, #{r.dig(:before, :missing).to_a.size} workers had not built $big within the deadline (see the server log)" unless r.dig(:before, :every_worker_served)
      notes << "after: not every new worker had served (#{r.dig(:after, :missing).to_a.size} missing)" if r[:after] && !r.dig(:after, :every_worker_served)
      notes.join("; ")
    end

    def self.label(r) = r[:variant] && r[:variant] != "defaults" ? "#{r[:server]} (#{r[:variant]})" : r[:server]
    def self.mbs(bytes) = F.mib(bytes, whole: true)

    def self.pct(value)
      return "–" unless value

      value >= 0 ? format("−%.1f %%", value * 100) : format("+%.1f %%", -value * 100)
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      rows = record[:results].map do |r|
        next [label(r), "failed: #{r[:failed]}", "", "", "", "", "", "", ""] unless r[:after]

        red_w = reduction(r, :workers_pss)
        red_a = reduction(r, :all_pss)
        [label(r), mbs(r.dig(:before, :totals, :workers_pss)), mbs(r.dig(:after, :totals, :workers_pss)), pct(red_w),
         mbs(r.dig(:before, :totals, :all_pss)), mbs(r.dig(:after, :totals, :all_pss)), pct(red_a),
         red_w && red_w >= TARGET ? "**yes**" : "no", notes(r)]
      end
      table = F.table(["server", "workers PSS before (MB)", "after (MB)", "reduction", "all processes before (MB)",
                       "after (MB)", "reduction", "≥ 75 % lower (workers)", "notes"], rows)
      tuned = s.dig(:variants, :"gc-tuned")&.map { |k, v| "#{k}=#{v}" }&.join(" ")
      P.page(P.title(record, json_name, goal_from: "issue 4"),
             P.run_table(record, [
               ["App", "`bench/apps/refork.ru`, `$big` = #{F.integer(s[:big_objects])} objects"], ["Memory", s[:memory_estimate]],
               ["Workers", "#{s[:workers]}, #{s[:threads_per_process]} threads each (Spindle threads engine, Puma); Pitchfork workers are single-threaded"],
               ["Traffic", "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, bursts of #{s[:traffic_burst_s]} s, header `#{s[:headers].join(', ')}`"]
             ]),
             "## Result\n\n#{table}", format(NOTES, tuned: tuned),
             "## Versions\n\n#{record[:servers].map { |v| "- #{v[:name]}: #{v[:version]}" }.join("\n")}",
             "## Per process\n\n#{record[:results].map { |r| details(r) }.join("\n\n")}")
    end

    def self.details(r)
      return "### #{label(r)}\n\nfailed: #{r[:failed]}" unless r[:before]

      lines = %i[before after].filter_map do |phase_label|
        phase = r[phase_label] or next
        rows = phase[:processes].map do |p|
          mem = p[:memory] || {}
          [phase_label, p[:role], p[:pid], p[:generation] || "–", mbs(mem[:rss]), mbs(mem[:pss]), mbs(mem[:uss]), "`#{p[:cmd][0, 60]}`"]
        end
        ["#{phase[:bursts]} bursts; every worker served: #{phase[:every_worker_served]}",
         F.table(%w[phase role pid generation RSS\ MB PSS\ MB USS\ MB command], rows)]
      end
      configs = (r[:configs] || {}).map { |path, text| "\n\n`#{path}`:\n\n```ruby\n#{text.chomp}\n```" }.join
      "### #{label(r)}\n\nCommand: `#{r[:command]}`#{configs}\n\nRefork: #{r.dig(:refork, :how)}.\n\n#{lines.flatten.join("\n\n")}"
    end

    def self.chart(record)
      s = record[:settings]
      chart = P.chart(record, "Refork: total PSS across #{s[:workers]} workers",
                      "PR #2099 app, #{F.integer(s[:big_objects])} objects per worker · servers one after another",
                      y_label: "total PSS (MB)", x_label: "server")
      ok = record[:results].select { |r| r[:after] }
      series = [["workers, before refork", :before, :workers_pss, "#d62728"], ["workers, after refork", :after, :workers_pss, "#2ca02c"],
                ["all processes, before", :before, :all_pss, "#ff9896"], ["all processes, after", :after, :all_pss, "#98df8a"]]
      chart.panel("total PSS (lower is better)", groups: ok.map { |r| label(r) }, series: series.map { |name, phase, key, color|
        { name: name, color: color, values: ok.map { |r| (r.dig(phase, :totals, key).to_f / 1048576).round }, hatched: ok.map { false } }
      }).render
    end

    NOTES = <<~MD.chomp
      - **workers PSS**: the sum of `Pss` over the serving worker processes only, as the PR measured (Puma has no
        separate mold: its worker 0 is the template and serves). **all processes**: every process of the server —
        workers, the mold (Spindle, Pitchfork) and the master/monitor — the memory the server really costs.
      - PSS divides each shared page among the processes mapping it, so the sum over processes is the real total.
      - The target is judged on the rows without a suffix: each server as its docs configure it for reforking, with no
        GC environment from the harness. For Spindle that includes `--lean-heap` (docs/REFORKING.md), which sets the
        same variables as the `(gc-tuned)` rows unless the environment has them. The `(gc-tuned)` rows run every
        server with `%<tuned>s`:
        after a fork, a worker's first GCs want 20 %% of its (10M-slot) heap free and grow the heap in new, private
        pages to get it, and with Ruby's 16 MB oldmalloc floor a busy worker soon runs a major GC, which copies the
        GC's mark stack (80 MB for this app's 10M-element Array); these rows show how much of what stays private
        after a refork is that, not the refork itself.
        Spindle's two rows are therefore two runs of one configuration: their difference is this benchmark's noise.
        The per-process tables below give each worker's USS (its private memory).
    MD
  end
end

Bench::Scenario.define(
  name: "refork",
  title: "Refork: total PSS of 8 workers before and after (PR #2099 app)",
  description: "The Puma PR #2099 app: each worker builds `$big = Array.new(N) { Object.new }` on its first request. " \
               "8 workers (5 threads each where threads apply), `wrk -c 16 -H 'Connection: close'` bursts of 5 s until every " \
               "worker has built its own copy, one more burst, then PSS of every process from /proc/PID/smaps_rollup; " \
               "refork; bursts until the old generation is gone and every new worker has served, one more burst, PSS again. " \
               "Servers run one after another, never at the same time.",
  goal: "Total PSS after the refork at least 75 % lower than before (the PR saw ~80 %), with Puma `fork_worker` and " \
        "Pitchfork's refork beside Spindle in the same run.",
  app: "refork.ru",
  path: "/",
  processes: [8],
  connections: [16],
  custom: Bench::ReforkMemory,
  quick: { servers: %w[spindle puma] } # ReforkMemory's own names; and its QUICK sizes
)
