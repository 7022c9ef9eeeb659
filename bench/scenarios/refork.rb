# frozen_string_literal: true

require "time"
require "etc"
require "fileutils"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/deadline"
require_relative "../lib/bench/refork_servers"
require_relative "../lib/bench/machine"
require_relative "../lib/bench/versions"
require_relative "../lib/bench/report/format"
require_relative "../lib/svg_chart"

module Bench
  # Issue 4, "What must be shown" #1: the PR #2099 app, 8 workers, traffic
  # until every worker has built its own $big, total PSS; refork; traffic until
  # every worker of the new generation has served; total PSS again. Spindle
  # (`spindlectl refork`), Puma `fork_worker` (SIGURG to the master: re-forks
  # workers 1..7 from worker 0) and Pitchfork (USR2 to the monitor: a worker
  # becomes the new mold), one after another, never at the same time.
  class ReforkMemory
    F = Report::Format
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

    # name => how to start it, which process is which, how to refork it and
    # when its new generation is complete.
    SERVERS = {
      "spindle" => { runtime: :spindle, version: -> { Versions.spindle } },
      "puma" => { runtime: :peers, version: -> { "#{Versions.gem('puma')} (fork_worker)" } },
      "pitchfork" => { runtime: :peers, version: -> { Versions.gem("pitchfork") } }
    }.freeze

    def self.run(settings) = new(settings).run

    def initialize(settings)
      @settings = settings
      @workers = settings.quick ? QUICK[:workers] : WORKERS
      @big = settings.quick ? QUICK[:big] : BIG_FULL
      @traffic = settings.quick ? QUICK[:traffic] : TRAFFIC
      @variants = settings.quick ? VARIANTS.slice(*QUICK[:variants]) : VARIANTS
      names = settings.servers ? SERVERS.keys.select { |n| settings.servers.any? { |p| File.fnmatch(p, n) } } : SERVERS.keys
      @names = names
    end

    def run
      started = Time.now
      source = Versions.spindle_source
      results = @variants.keys.flat_map { |variant| @names.map { |name| skipped(name, variant) || measure_server(name, variant) } }
      {
        scenario: { name: "refork", title: TITLE, description: DESCRIPTION, goal: GOAL, app: "bench/apps/refork.ru", path: "/" },
        started_at: started.iso8601, finished_at: Time.now.iso8601, machine: Machine.describe,
        settings: { quick: @settings.quick, workers: @workers, threads_per_process: THREADS, big_objects: @big,
                    traffic_burst_s: @traffic, connections: CONNECTIONS, headers: HEADERS, processes: [@workers],
                    connections_list: [CONNECTIONS], target_reduction: TARGET, variants: @variants,
                    memory_estimate: "#{@big / 1_000_000}M objects × 40 B + #{@big * 8 / 1_000_000} MB array ≈ " \
                                     "#{(@big * 48 / 1_000_000.0).round} MB per worker; × #{@workers} ≈ " \
                                     "#{(@big * 48 * @workers / 1e9).round(1)} GB per server, servers one after another " \
                                     "on #{Machine.memory_gib} GiB" },
        load_generator: { tool: "wrk #{Versions.command(%w[wrk -v], /wrk (\S+)/)}", threads: 1 },
        servers: @names.map { |n| { name: n, family: n == "spindle" ? "spindle" : "peer", version: safe(SERVERS[n][:version]) } },
        results: results, measurements: [],
        spindle_source: { at_start: source, at_end: Versions.spindle_source, changed: Versions.spindle_source != source }
      }
    end

    private

    # Past the run's deadline (or the --quick budget) nothing new starts.
    def skipped(name, variant)
      Deadline.skipped(@settings, "refork #{name} #{variant}", { server: name, variant: variant })
    end

    def safe(version)
      version.call
    rescue StandardError => e
      "unknown (#{e.message})"
    end

    def measure_server(name, variant = "defaults")
      marks = File.join(Paths::TMP, "refork-#{name}-marks")
      FileUtils.rm_rf(marks)
      FileUtils.mkdir_p(marks)
      target = Memory::Target.new(name: "refork", app: "refork.ru", path: "/ready", expect_body: "ready",
                                  env: -> { { "REFORK_BIG_N" => @big.to_s, "REFORK_MARKS" => marks }.merge(VARIANTS.fetch(variant)) })
      server = Memory.start(name: "refork-#{name}", runtime: SERVERS[name][:runtime], target: target,
                            processes: @workers, threads: THREADS, ready_timeout: 120) { |l| command(name, l) }
      result = { server: name, variant: variant, command: server.command_line, configs: server.launch.written }
      result.merge!(phase(name, server, marks, :before))
      result[:refork] = refork(name, server, result[:before][:processes])
      result.merge!(phase(name, server, marks, :after, old: result[:before][:processes]))
      result
    rescue StandardError, ServerProcess::StartFailed => e
      Log.warn("refork #{name}: #{e.class}: #{e.message}")
      (result || { server: name, variant: variant }).merge(failed: "#{e.class}: #{e.message}#{" (log: #{server.send(:log_tail)})" if server}")
    ensure
      server&.stop
    end

    def command(name, launch)
      @control = ReforkServers.control_path(launch)
      ReforkServers.command(name, launch, workers: @workers, threads: THREADS)
    end

    # Every process of the server with its role: master, worker, mold.
    def processes(name, server)
      if name == "spindle"
        stats = Memory.control(@control, "stats")
        roles = { stats["master"]["pid"] => ["master", stats["master"]["generation"]] }
        stats["workers"].each { |w| roles[w["pid"]] = ["worker", w["generation"]] if w["pid"] && w["state"] != "mold" }
        roles[stats["mold"]["pid"]] = ["mold", stats["mold"]["generation"]] if stats["mold"].is_a?(Hash) && stats["mold"]["pid"]
        stats["workers"].each { |w| roles[w["pid"]] = ["mold", w["generation"]] if w["state"] == "mold" }
        Memory.tree(server.pid).map do |p|
          role, gen = roles[p[:pid]] || ["other", nil]
          p.merge(role: role, generation: gen)
        end
      else
        Memory.tree(server.pid).map do |p|
          role = if p[:pid] == server.pid then "master"
                 elsif p[:cmd].match?(/cluster worker \d+|worker\[\d+\]/) then "worker"
                 elsif p[:cmd].include?("mold") then "mold"
                 else "other"
                 end
          index = p[:cmd][/cluster worker (\d+)|worker\[(\d+)\]/] && (Regexp.last_match(1) || Regexp.last_match(2)).to_i
          p.merge(role: role, generation: p[:cmd][/gen:(\d+)/, 1]&.to_i, index: index)
        end
      end
    end

    def workers(name, server) = processes(name, server).select { |p| p[:role] == "worker" }

    # Traffic until every worker has served (and, before the refork, built
    # its $big), then one more burst; then the PSS of every process.
    def phase(name, server, marks, label, old: nil)
      mark = label == :before ? "built" : "seen"
      bursts = 0
      ok = Memory.wait_for(@settings.quick ? 30 : 240, every: 0) do
        ws = workers(name, server)
        done = ws.size == @workers && ws.all? { |w| File.exist?(File.join(marks, "#{mark}-#{w[:pid]}")) } &&
               (old.nil? || generation_complete?(name, server, old))
        next true if done

        raise ServerProcess::StartFailed, "exited: #{server.death}" unless server.alive?

        burst(server)
        bursts += 1
        false
      end
      ws = workers(name, server)
      missing = ws.reject { |w| File.exist?(File.join(marks, "#{mark}-#{w[:pid]}")) }.map { |w| w[:pid] }
      Log.warn("refork #{name} #{label}: not every worker #{mark} within the deadline: #{missing}") unless ok
      burst(server) # traffic after the last worker joined
      bursts += 1
      sleep 2 # let check-ins and lazy frees settle; not a readiness wait
      procs = processes(name, server).map { |p| p.merge(memory: Memory.rollup(p[:pid])) }
      Log.info(format("refork %-9s %-6s workers %d  PSS workers %7.1f MB  all %7.1f MB", name, label,
                      procs.count { |p| p[:role] == "worker" }, Memory.mb(total(procs, %w[worker])),
                      Memory.mb(total(procs, %w[worker mold master other]))))
      { label => { processes: procs, bursts: bursts, every_worker_served: ok ? true : false, missing: missing,
                   totals: totals(procs) } }
    end

    def burst(server)
      Memory.wrk_run(server.launch.url("/"), connections: CONNECTIONS, duration: @traffic, headers: HEADERS, timeout: 60)
    end

    def total(procs, roles) = procs.select { |p| roles.include?(p[:role]) }.sum { |p| p.dig(:memory, :pss).to_i }

    def totals(procs)
      sum = ->(roles, key) { procs.select { |p| roles.include?(p[:role]) }.sum { |p| p.dig(:memory, key).to_i } }
      { workers_pss: sum.call(%w[worker], :pss), workers_and_mold_pss: sum.call(%w[worker mold], :pss),
        all_pss: sum.call(%w[worker mold master other], :pss), workers_rss: sum.call(%w[worker], :rss),
        workers_uss: sum.call(%w[worker], :uss) }
    end

    def refork(name, server, before)
      at = Memory.now
      ReforkServers.trigger(name, server, @control)
      { how: { "spindle" => "bin/spindlectl --control unix://… refork", "puma" => "kill -URG <master> (pumactl refork)",
               "pitchfork" => "kill -USR2 <monitor>" }[name], triggered_after_s: 0 }.tap { @refork_at = at }
    end

    # The old generation is gone and the new one is complete.
    def generation_complete?(name, server, old)
      old_workers = old.select { |p| p[:role] == "worker" }.map { |p| p[:pid] }
      ws = workers(name, server)
      return false unless ws.size == @workers

      case name
      when "spindle" then ws.all? { |w| w[:generation].to_i >= 1 } && (ws.map { |w| w[:pid] } & old_workers).empty?
      when "puma" then ws.count { |w| old_workers.include?(w[:pid]) } <= 1 # worker 0 is kept: it is the template
      when "pitchfork" then ws.all? { |w| w[:generation].to_i >= 1 }
      end
    end

    TITLE = "Refork: total PSS of 8 workers before and after (PR #2099 app)"
    DESCRIPTION = "The Puma PR #2099 app: each worker builds `$big = Array.new(N) { Object.new }` on its first request. " \
                  "8 workers (5 threads each where threads apply), `wrk -c 16 -H 'Connection: close'` bursts of 5 s until every " \
                  "worker has built its own copy, one more burst, then PSS of every process from /proc/PID/smaps_rollup; " \
                  "refork; bursts until the old generation is gone and every new worker has served, one more burst, PSS again. " \
                  "Servers run one after another, never at the same time."
    GOAL = "Total PSS after the refork at least 75 % lower than before (the PR saw ~80 %), with Puma `fork_worker` and " \
           "Pitchfork's refork beside Spindle in the same run."

    # ---- report ---------------------------------------------------------

    def self.reduction(result, key)
      before = result.dig(:before, :totals, key).to_f
      after = result.dig(:after, :totals, key).to_f
      return nil unless before.positive? && after.positive?

      1 - after / before
    end

    def self.headline(record)
      parts = record[:results].select { |r| r[:variant].nil? || r[:variant] == "defaults" }.map do |r|
        red = reduction(r, :workers_pss)
        red ? "#{r[:server]} −#{(red * 100).round}%" : "#{r[:server]} failed"
      end
      "total worker PSS after refork, Ruby's GC defaults: #{parts.join(', ')} (target ≥ 75 % lower)"
    end

    def self.render(record, json_name)
      [markdown(record, json_name), chart(record)]
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

    def self.mbs(bytes) = bytes ? F.integer((bytes / 1048576.0).round) : "–"

    def self.pct(value)
      return "–" unless value

      value >= 0 ? format("−%.1f %%", value * 100) : format("+%.1f %%", -value * 100)
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
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
      details = record[:results].map { |r| details(r) }.join("\n\n")
      versions = record[:servers].map { |v| "- #{v[:name]}: #{v[:version]}" }.join("\n")
      <<~MD
        # #{record[:scenario][:title]} — `bench/run refork`

        > Generated by `bench/run refork` from [data/#{json_name}](data/#{json_name}); do not edit by hand
        > (`bench/run refork --render` redraws from the newest data).#{"\n>\n> **Quick run** (`--quick`, #{s[:big_objects]} objects): a smoke test, not a result." if s[:quick]}

        #{record[:scenario][:description]}

        **What Spindle must show** (issue 4): #{record[:scenario][:goal]}

        ![refork chart](refork.svg)

        ## Run

        #{F.table(%w[what value], [
          ['Date', "#{record[:started_at]} to #{record[:finished_at]}"],
          ['Machine', "#{m[:nproc]} cores (#{m[:cpu]}), #{m[:memory_gib]} GiB, #{m[:kernel]}, #{m[:os]}"],
          ['Ruby', "#{m[:ruby]}; YJIT off"],
          ['App', "`bench/apps/refork.ru`, `$big` = #{F.integer(s[:big_objects])} objects"],
          ['Memory', s[:memory_estimate]],
          ['Workers', "#{s[:workers]}, #{s[:threads_per_process]} threads each (Spindle threads engine, Puma); Pitchfork workers are single-threaded"],
          ['Traffic', "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, bursts of #{s[:traffic_burst_s]} s, header `#{s[:headers].join(', ')}`"],
          ['Spindle source', "lib/ext/bin digest #{record.dig(:spindle_source, :at_start)}#{record.dig(:spindle_source, :changed) ? ' (**changed during the run**)' : ', unchanged during the run'}"]
        ])}

        ## Result

        #{table}

        - **workers PSS**: the sum of `Pss` over the serving worker processes only, as the PR measured (Puma has no
          separate mold: its worker 0 is the template and serves). **all processes**: every process of the server —
          workers, the mold (Spindle, Pitchfork) and the master/monitor — the memory the server really costs.
        - PSS divides each shared page among the processes mapping it, so the sum over processes is the real total.
        - The target is judged on the rows without a suffix: each server as its docs configure it for reforking, with no
          GC environment from the harness. For Spindle that includes `--lean-heap` (docs/REFORKING.md), which sets the
          same variables as the `(gc-tuned)` rows unless the environment has them. The `(gc-tuned)` rows run every
          server with `#{record.dig(:settings, :variants, :"gc-tuned")&.map { |k, v| "#{k}=#{v}" }&.join(' ')}`:
          after a fork, a worker's first GCs want 20 % of its (10M-slot) heap free and grow the heap in new, private
          pages to get it, and with Ruby's 16 MB oldmalloc floor a busy worker soon runs a major GC, which copies the
          GC's mark stack (80 MB for this app's 10M-element Array); these rows show how much of what stays private
          after a refork is that, not the refork itself.
          Spindle's two rows are therefore two runs of one configuration: their difference is this benchmark's noise.
          The per-process tables below give each worker's USS (its private memory).

        ## Versions

        #{versions}

        ## Per process

        #{details}
      MD
    end

    def self.details(r)
      return "### #{label(r)}\n\nfailed: #{r[:failed]}" unless r[:before]

      lines = %i[before after].filter_map do |label|
        phase = r[label] or next
        rows = phase[:processes].map do |p|
          mem = p[:memory] || {}
          [label, p[:role], p[:pid], p[:generation] || "–", mbs(mem[:rss]), mbs(mem[:pss]), mbs(mem[:uss]), "`#{p[:cmd][0, 60]}`"]
        end
        note = "#{phase[:bursts]} bursts; every worker served: #{phase[:every_worker_served]}"
        [note, F.table(%w[phase role pid generation RSS\ MB PSS\ MB USS\ MB command], rows)]
      end
      <<~MD.chomp
        ### #{label(r)}

        Command: `#{r[:command]}`#{r[:configs]&.any? ? "\n\n" + r[:configs].map { |path, text| "`#{path}`:\n\n```ruby\n#{text.chomp}\n```" }.join("\n\n") : ''}

        Refork: #{r.dig(:refork, :how)}.

        #{lines.flatten.join("\n\n")}
      MD
    end

    def self.chart(record)
      s = record[:settings]
      chart = SvgChart.new(title: "Refork: total PSS across #{s[:workers]} workers (bench/run refork)",
                           subtitle: "#{record[:started_at][0, 10]} · PR #2099 app, #{F.integer(s[:big_objects])} objects per worker · " \
                                     "servers one after another#{' · QUICK' if s[:quick]}",
                           y_label: "total PSS (MB)", x_label: "server")
      ok = record[:results].select { |r| r[:after] }
      groups = ok.map { |r| label(r) }
      series = [["workers, before refork", :before, :workers_pss, "#d62728"], ["workers, after refork", :after, :workers_pss, "#2ca02c"],
                ["all processes, before", :before, :all_pss, "#ff9896"], ["all processes, after", :after, :all_pss, "#98df8a"]]
      chart.panel("total PSS (lower is better)", groups: groups, series: series.map { |name, phase, key, color|
        { name: name, color: color, values: ok.map { |r| (r.dig(phase, :totals, key).to_f / 1048576).round }, hatched: ok.map { false } }
      })
      chart.render
    end
  end
end

Bench::Scenario.define(
  name: "refork",
  title: Bench::ReforkMemory::TITLE,
  description: Bench::ReforkMemory::DESCRIPTION,
  goal: Bench::ReforkMemory::GOAL,
  app: "refork.ru",
  path: "/",
  processes: [8],
  connections: [16],
  custom: Bench::ReforkMemory,
  report: Bench::ReforkMemory,
  quick: { servers: %w[spindle puma] } # ReforkMemory's own names; and its QUICK sizes
)
