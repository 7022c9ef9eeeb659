# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/refork_servers"

module Bench
  # Issue 11, item 1: a second refork never completed (one slot stuck in
  # `booting`; with one worker, an outage). Five reforks in a row under load
  # (the description: below says how); what counts is that every generation
  # completes and that wrk sees no failed request.
  class ReforkGenerations < CustomScenario
    SERVERS = ReforkServers::SERVERS.slice("spindle")
    GENERATIONS = 5
    WORKER_COUNTS = [1, 3].freeze
    THREADS = 5
    CONNECTIONS = 16
    HEADERS = ["Connection: close"].freeze
    GENERATION_DEADLINE = 60 # seconds a generation may take before the run calls it stuck

    def initialize(scenario, settings)
      super
      @counts = settings.given?(:processes) ? Array(settings.processes) : WORKER_COUNTS
    end

    private

    def trials
      { runs: @counts.map { |workers| trial("-w #{workers}", { workers: workers }) { one(workers) } } }
    end

    def settings_record
      { generations: GENERATIONS, processes: @counts, threads_per_process: THREADS, connections: CONNECTIONS,
        headers: HEADERS, generation_deadline_s: GENERATION_DEADLINE }
    end

    def servers_record = ReforkServers.servers_record(%w[spindle])

    # One server, one wrk load in the background (bounded: long enough for
    # every generation at its deadline, stopped with INT once they are done).
    def one(workers)
      target = Scenario.new(name: "refork-generations", app: "hello.ru", path: "/", expect_body: "Hello World", env: nil)
      server = ReforkServers.start("spindle", "refork-generations-w#{workers}", target, workers: workers, threads: THREADS)
      out = File.join(Paths::TMP, "refork-generations-wrk-#{Process.pid}.txt")
      load = Memory.wrk(server.launch.url("/"), connections: CONNECTIONS, headers: HEADERS, duration: GENERATIONS * GENERATION_DEADLINE)
      wrk = File.open(out, "w") { |log| load.spawn(log) }
      generations = reforks(server, workers)
      Process.kill(:INT, wrk) # wrk prints its figures on INT
      Child.wait(wrk, 20)
      record(workers, server, generations, Memory.wrk_figures(Wrk.parse(File.read(out))), load.argv)
    ensure
      Child.kill(wrk) if wrk
      server&.stop
    end

    # Seconds from each refork command to its generation complete; stops at
    # the first generation that does not complete within the deadline.
    def reforks(server, workers)
      1.upto(GENERATIONS).each_with_object([]) do |generation, done|
        at = Child.now
        ReforkServers.trigger("spindle", server)
        complete = Child.wait_for(GENERATION_DEADLINE) { complete?(server, generation, workers) }
        done << { generation: generation, complete: complete ? true : false, seconds: (Child.now - at).round(2) }
        Log.info(format("refork-generations -w %d generation %d %s after %.1f s", workers, generation,
                        complete ? "complete" : "NOT complete", done.last[:seconds]))
        break done unless complete
      end
    end

    def complete?(server, generation, workers)
      stats = Memory.control(ReforkServers.control(server.launch), "stats")
      ws = stats["workers"]
      stats["master"]["generation"] == generation && ws.size == workers &&
        ws.all? { |w| w["state"] == "serving" && w["generation"] == generation && w["requests"].positive? } &&
        stats["mold"]&.values_at("state", "generation") == ["mold", generation]
    end

    def record(workers, server, generations, wrk, argv)
      ok = generations.size == GENERATIONS && generations.all? { |g| g[:complete] }
      failed = wrk[:non_2xx].to_i + wrk[:socket_errors].to_s.scan(/\d+/).sum(&:to_i) # "connect 0, read 2, ..."
      Log.info(format("refork-generations -w %d: %d of %d generations complete, %s requests, %d failed", workers,
                      generations.count { |g| g[:complete] }, GENERATIONS, wrk[:requests].inspect, failed))
      { command: server.command_line, generations: generations, every_generation_complete: ok,
        requests: wrk[:requests], non_2xx: wrk[:non_2xx], socket_errors: wrk[:socket_errors], failed_requests: failed,
        wrk: WrkTrial.command_line(argv) }
    end

    # ---- report ---------------------------------------------------------

    def self.passed?(r) = r[:every_generation_complete] && r[:failed_requests].to_i.zero?

    def self.headline(record)
      parts = record[:runs].map do |r|
        next "-w #{r[:workers]} failed" if r[:failed]

        "-w #{r[:workers]}: #{r[:generations].count { |g| g[:complete] }}/#{GENERATIONS} generations, #{r[:failed_requests]} failed requests"
      end
      "five reforks in a row under load: #{parts.join('; ')}"
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      rows = record[:runs].map do |r|
        next [r[:workers], "failed: #{r[:failed]}", "", "", "", "", ""] if r[:failed]

        [r[:workers], "#{r[:generations].count { |g| g[:complete] }} of #{s[:generations]}",
         r[:generations].map { |g| g[:complete] ? g[:seconds].to_s : "#{g[:seconds]} (stuck)" }.join(", "),
         F.integer(r[:requests].to_i), r[:non_2xx].to_i, r[:socket_errors] || "0", passed?(r) ? "**yes**" : "no"]
      end
      table = F.table(["workers", "generations complete", "seconds per generation (refork → complete)", "requests", "non-2xx",
                       "socket errors", "every generation, no failure"], rows)
      P.page(P.title(record, json_name, goal_from: "issue 11"),
             P.run_table(record, [["Load", "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, `#{s[:headers].join(', ')}`, sharing the cores"],
                                  ["Spindle", record[:servers].first[:version]]]),
             "## Result\n\n#{table}\n\nA generation that is not complete within #{s[:generation_deadline_s]} s is marked stuck, and the run stops reforking.",
             "## Commands\n\n#{P.sh(ok(record).map { |r| r[:command] } + ["#{ok(record).first&.dig(:wrk)}   # for the whole run, stopped with INT after the last generation"])}")
    end

    def self.chart(record)
      s = record[:settings]
      chart = P.chart(record, "Refork: seconds from the command to the generation complete",
                      "hello app, wrk -c #{s[:connections]} · #{s[:generations]} reforks in a row",
                      y_label: "seconds", x_label: "generation", hatch_note: "hatched: not complete within the deadline (stuck)")
      ok(record).each do |r|
        gens = r[:generations]
        chart.panel("#{r[:workers]} worker(s)", groups: gens.map { |g| g[:generation].to_s },
                                                 series: [{ name: "refork → generation complete", values: gens.map { |g| g[:seconds] },
                                                            hatched: gens.map { |g| !g[:complete] } }])
      end
      chart.render
    end
  end
end

Bench::Scenario.define(
  name: "refork-generations",
  title: "Refork: five generations in a row under load",
  description: "Spindle only. The hello app (`bench/apps/hello.ru`), `--lean-heap`, one `wrk -t 1 -c 16 -H 'Connection: close'` " \
               "load for the whole run, and five `spindlectl refork` in a row, each once the previous generation is complete " \
               "(every worker of generation g serving and having served, the mold of generation g, nothing else); with 1 and " \
               "with 3 workers.",
  goal: "Every generation completes, and wrk sees no failed request (non-2xx or socket error).",
  app: "hello.ru",
  path: "/",
  processes: Bench::ReforkGenerations::WORKER_COUNTS,
  connections: [16],
  custom: Bench::ReforkGenerations,
  quick: { servers: %w[spindle] } # the whole scenario is already small
)
