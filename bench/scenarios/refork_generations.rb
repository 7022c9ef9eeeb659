# frozen_string_literal: true

require "time"
require "fileutils"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/deadline"
require_relative "../lib/bench/refork_servers"
require_relative "../lib/bench/machine"
require_relative "../lib/bench/versions"
require_relative "../lib/bench/report/format"
require_relative "../lib/svg_chart"

module Bench
  # Issue 11, item 1: a second refork never completed (one slot stuck in
  # `booting`; with one worker, an outage). Spindle only, the hello app, one
  # wrk load (`Connection: close`, so every worker accepts some) for the whole
  # run, and five reforks in a row: each is triggered once the previous
  # generation is complete (every worker of generation g serving and having
  # served, the mold of generation g, nothing else), with 1 and with 3 workers.
  # What counts is that every generation completes and that wrk sees no
  # failed request; the seconds each generation took are recorded beside.
  class ReforkGenerations
    F = Report::Format
    GENERATIONS = 5
    WORKER_COUNTS = [1, 3].freeze
    THREADS = 5
    CONNECTIONS = 16
    HEADERS = ["Connection: close"].freeze
    GENERATION_DEADLINE = 60 # seconds a generation may take before the run calls it stuck
    SERVERS = { "spindle" => { runtime: :spindle, version: -> { Versions.spindle } } }.freeze

    def self.run(settings) = new(settings).run

    def initialize(settings)
      @settings = settings
      @counts = settings.given?(:processes) ? Array(settings.processes) : WORKER_COUNTS
    end

    def run
      started = Time.now
      source = Versions.spindle_source
      runs = @counts.map { |workers| skipped(workers) || one(workers) }
      {
        scenario: { name: "refork-generations", title: TITLE, description: DESCRIPTION, goal: GOAL, app: "bench/apps/hello.ru", path: "/" },
        started_at: started.iso8601, finished_at: Time.now.iso8601, machine: Machine.describe,
        settings: { quick: @settings.quick, generations: GENERATIONS, processes: @counts, threads_per_process: THREADS,
                    connections: CONNECTIONS, headers: HEADERS, generation_deadline_s: GENERATION_DEADLINE },
        load_generator: { tool: "wrk #{Versions.command(%w[wrk -v], /wrk (\S+)/)}", threads: 1, shares_cores: true },
        servers: [{ name: "spindle", family: "spindle", version: safe(SERVERS["spindle"][:version]) }],
        runs: runs, measurements: [],
        spindle_source: { at_start: source, at_end: Versions.spindle_source, changed: Versions.spindle_source != source }
      }
    end

    private

    def skipped(workers)
      Deadline.skipped(@settings, "refork-generations -w #{workers}", { workers: workers })
    end

    def safe(version)
      version.call
    rescue StandardError => e
      "unknown (#{e.message})"
    end

    # One server, one wrk load in the background (bounded: long enough for
    # every generation at its deadline, stopped with INT once they are done).
    def one(workers)
      target = Memory::Target.new(name: "refork-generations", app: "hello.ru", path: "/", expect_body: "Hello World", env: nil)
      server = Memory.start(name: "refork-generations-w#{workers}", runtime: :spindle, target: target,
                            processes: workers, threads: THREADS) { |l| command(l, workers) }
      out = File.join(Paths::TMP, "refork-generations-wrk-#{Process.pid}.txt")
      wrk, argv = File.open(out, "w") do |log|
        Memory.wrk_spawn(server.launch.url("/"), connections: CONNECTIONS, headers: HEADERS,
                         duration: GENERATIONS * GENERATION_DEADLINE, log: log)
      end
      generations = reforks(workers)
      Process.kill(:INT, wrk) # wrk prints its summary on INT
      Memory.wrk_finish(wrk, 0)
      record(workers, server, generations, Memory.wrk_parse(File.read(out)), argv)
    rescue StandardError, ServerProcess::StartFailed => e
      Log.warn("refork-generations -w #{workers}: #{e.class}: #{e.message}")
      { workers: workers, failed: "#{e.class}: #{e.message}" }
    ensure
      Memory.wrk_kill(wrk) if wrk
      server&.stop
    end

    def command(launch, workers)
      @control = ReforkServers.control_path(launch)
      ReforkServers.command("spindle", launch, workers: workers, threads: THREADS)
    end

    # Seconds from each refork command to its generation complete; stops at
    # the first generation that does not complete within the deadline.
    def reforks(workers)
      1.upto(GENERATIONS).each_with_object([]) do |generation, done|
        at = Memory.now
        Memory.control(@control, "refork")
        complete = Memory.wait_for(GENERATION_DEADLINE) { complete?(generation, workers) }
        done << { generation: generation, complete: complete ? true : false, seconds: (Memory.now - at).round(2) }
        Log.info(format("refork-generations -w %d generation %d %s after %.1f s", workers, generation,
                        complete ? "complete" : "NOT complete", done.last[:seconds]))
        break done unless complete
      end
    end

    def complete?(generation, workers)
      stats = Memory.control(@control, "stats")
      ws = stats["workers"]
      stats["master"]["generation"] == generation && ws.size == workers &&
        ws.all? { |w| w["state"] == "serving" && w["generation"] == generation && w["requests"].positive? } &&
        stats["mold"]&.values_at("state", "generation") == ["mold", generation]
    end

    def record(workers, server, generations, wrk, argv)
      ok = generations.size == GENERATIONS && generations.all? { |g| g[:complete] }
      failed = wrk[:non_2xx].to_i + socket_error_count(wrk[:socket_errors])
      r = { workers: workers, command: server.command_line, generations: generations, every_generation_complete: ok,
            requests: wrk[:requests], non_2xx: wrk[:non_2xx], socket_errors: wrk[:socket_errors], failed_requests: failed,
            wrk: argv.join(" ").sub(%r{127\.0\.0\.1:\d+}, "127.0.0.1:PORT") }
      Log.info(format("refork-generations -w %d: %d of %d generations complete, %s requests, %d failed", workers,
                      generations.count { |g| g[:complete] }, GENERATIONS, wrk[:requests].inspect, failed))
      r
    end

    # "connect 0, read 2, write 0, timeout 0" -> 2
    def socket_error_count(text) = text.to_s.scan(/\d+/).sum(&:to_i)

    TITLE = "Refork: five generations in a row under load"
    DESCRIPTION = "Spindle only. The hello app (`bench/apps/hello.ru`), `--lean-heap`, one `wrk -t 1 -c 16 -H 'Connection: close'` " \
                  "load for the whole run, and five `spindlectl refork` in a row, each once the previous generation is complete " \
                  "(every worker of generation g serving and having served, the mold of generation g, nothing else); with 1 and " \
                  "with 3 workers."
    GOAL = "Every generation completes, and wrk sees no failed request (non-2xx or socket error)."

    # ---- report ---------------------------------------------------------

    def self.ok(record) = record[:runs].reject { |r| r[:failed] }

    def self.passed?(r) = r[:every_generation_complete] && r[:failed_requests].to_i.zero?

    def self.headline(record)
      parts = record[:runs].map do |r|
        next "-w #{r[:workers]} failed" if r[:failed]

        "-w #{r[:workers]}: #{r[:generations].count { |g| g[:complete] }}/#{GENERATIONS} generations, #{r[:failed_requests]} failed requests"
      end
      "five reforks in a row under load: #{parts.join('; ')}"
    end

    def self.render(record, json_name) = [markdown(record, json_name), chart(record)]

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      rows = record[:runs].map do |r|
        next [r[:workers], "failed: #{r[:failed]}", "", "", "", "", ""] if r[:failed]

        [r[:workers], "#{r[:generations].count { |g| g[:complete] }} of #{s[:generations]}",
         r[:generations].map { |g| g[:complete] ? g[:seconds].to_s : "#{g[:seconds]} (stuck)" }.join(", "),
         F.integer(r[:requests].to_i), r[:non_2xx].to_i, r[:socket_errors] || "0", passed?(r) ? "**yes**" : "no"]
      end
      <<~MD
        # #{record[:scenario][:title]} — `bench/run refork-generations`

        > Generated by `bench/run refork-generations` from [data/#{json_name}](data/#{json_name}); do not edit by hand
        > (`bench/run refork-generations --render` redraws from the newest data).#{"\n>\n> **Quick run** (`--quick`): a smoke test, not a result." if s[:quick]}

        #{record[:scenario][:description]}

        **What Spindle must show** (issue 11): #{record[:scenario][:goal]}

        ![refork-generations chart](refork-generations.svg)

        ## Run

        #{F.table(%w[what value], [
          ['Date', "#{record[:started_at]} to #{record[:finished_at]}"],
          ['Machine', "#{m[:nproc]} cores (#{m[:cpu]}), #{m[:memory_gib]} GiB, #{m[:kernel]}, #{m[:os]}"],
          ['Ruby', "#{m[:ruby]}; YJIT off"],
          ['Load', "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, `#{s[:headers].join(', ')}`, sharing the cores"],
          ['Spindle', record[:servers].first[:version]],
          ['Spindle source', "lib/ext/bin digest #{record.dig(:spindle_source, :at_start)}#{record.dig(:spindle_source, :changed) ? ' (**changed during the run**)' : ', unchanged during the run'}"]
        ])}

        ## Result

        #{F.table(['workers', 'generations complete', 'seconds per generation (refork → complete)', 'requests', 'non-2xx',
                   'socket errors', 'every generation, no failure'], rows)}

        A generation that is not complete within #{s[:generation_deadline_s]} s is marked stuck, and the run stops reforking.

        ## Commands

        ```sh
        #{ok(record).map { |r| r[:command] }.join("\n")}
        #{ok(record).first&.dig(:wrk)}   # for the whole run, stopped with INT after the last generation
        ```
      MD
    end

    def self.chart(record)
      s = record[:settings]
      chart = SvgChart.new(title: "Refork: seconds from the command to the generation complete (bench/run refork-generations)",
                           subtitle: "#{record[:started_at][0, 10]} · hello app, wrk -c #{s[:connections]} · #{s[:generations]} reforks in a row#{' · QUICK' if s[:quick]}",
                           y_label: "seconds", x_label: "generation", hatch_note: "hatched: not complete within the deadline (stuck)")
      ok(record).each do |r|
        chart.panel("#{r[:workers]} worker(s)", groups: r[:generations].map { |g| g[:generation].to_s },
                                                 series: [{ name: "refork → generation complete", values: r[:generations].map { |g| g[:seconds] },
                                                            hatched: r[:generations].map { |g| !g[:complete] } }])
      end
      chart.render
    end
  end
end

Bench::Scenario.define(
  name: "refork-generations",
  title: Bench::ReforkGenerations::TITLE,
  description: Bench::ReforkGenerations::DESCRIPTION,
  goal: Bench::ReforkGenerations::GOAL,
  app: "hello.ru",
  path: "/",
  processes: Bench::ReforkGenerations::WORKER_COUNTS,
  connections: [16],
  custom: Bench::ReforkGenerations,
  report: Bench::ReforkGenerations,
  quick: { servers: %w[spindle] } # the whole scenario is already small
)
