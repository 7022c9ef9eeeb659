# frozen_string_literal: true

require_relative "../lib/bench/app_db"
require_relative "../lib/bench/clients/open_loop"
require_relative "../lib/bench/stats"
require_relative "../lib/bench/proc_stat"
require_relative "../lib/bench/report/parts"
require_relative "../lib/bench/server_process"
require_relative "../lib/bench/registry"
require_relative "../lib/bench/log"

# Issue 68 item 2: twice a server's capacity, offered at a fixed rate. A
# server that queues everything serves every request late; one that sheds
# (Spindle's --max-queue-time, docs/QUEUE_TIME.md) answers the stale ones
# 503 and serves the rest in time. Per server: its own capacity (closed-loop
# wrk), its unloaded p99 (a quarter of that rate), then the overload: the
# same offered rate for every server, twice spindle-threads' capacity
# measured at the start of the run (the server the targets are about: so it
# is at about twice its own, and a slower peer further past its own), from
# the open-loop client (Bench::OpenLoop).
module Bench
  module Overload
    MAX_QUEUE_TIME = 0.25 # s: ~10x the blog's unloaded p99 on this machine, far below a client's patience
    LOAD = 2.0 # offered rate, x the reference capacity
    UNLOADED = 0.25 # the unloaded run's rate, x the server's own capacity
    # Enough for the queue to build up in the server, not in the client: at
    # 3,500 req/s a wait of MAX_QUEUE_TIME is ~900 requests in flight.
    MAX_CONNECTIONS = 4096
    TIMEOUT = 10 # s: the client gives up on a request this long after its slot
    CAPACITY_CONNECTIONS = 16

    REFERENCE = "spindle-threads"

    REFERENCE_RUNS = 3

    # The reference capacity on this page, once per bench/run process and
    # scenario, as latency.rb calibrates on Puma: REFERENCE_RUNS starts of
    # its own, each warmed up and measured once (wrk -c 16, unpaced), and
    # their median. Starts, not runs of one start: the threads engine pins
    # its app threads to a CPU drawn at random at each start
    # (--cpu-affinity auto, docs/ENGINES.md), which may move its capacity
    # on 2 cores shared with the client and PostgreSQL. Three starts read
    # 286, 382 and 299 req/s; one start made the offered rate 2.7-3.4x the
    # same server's later capacities in two runs, and 1x in a third.
    def self.reference(settings, scenario)
      (@reference ||= {})[scenario.name] ||= begin
        runs = Array.new(REFERENCE_RUNS) { reference_start(settings, scenario) }
        max = Stats.median(runs.map { |r| r[:rps] })
        Log.info(format("overload: the reference, %s: capacity (wrk -c %d, %d s, median of %d starts: %s) = %.0f req/s", REFERENCE,
                        CAPACITY_CONNECTIONS, settings.duration, REFERENCE_RUNS, runs.map { |r| r[:rps].round }.join(", "), max))
        { server: REFERENCE, capacity: max.round(1), runs: runs.map { |r| r[:rps].round(1) }, offered_rps: (max * LOAD).round,
          command: runs.first[:command] }
      end
    end

    def self.reference_start(settings, scenario)
      server = ServerProcess.for(spec: SERVERS.fetch(REFERENCE), scenario: scenario, threads: settings.threads, processes: 1)
      server.start
      wrk = ->(seconds) { Wrk.new(server_pid: server.pgid, url: server.launch.url(scenario.path), connections: CAPACITY_CONNECTIONS,
                                  duration: seconds, threads: 1, timeout: settings.wrk_timeout).run }
      wrk.call(settings.warmup)
      r = wrk.call(settings.duration).result
      { rps: r[:requests] / (r[:duration_us] / 1e6), command: server.command_line }
    ensure
      server&.stop
    end

    class Trial < WrkTrial
      def initialize(**)
        super
        @seconds = @settings.quick ? 3 : [@settings.duration, 10].max
      end

      def measure(_connections)
        ref = Overload.reference(@settings, @scenario)
        capacity = record(wrk(CAPACITY_CONNECTIONS, @settings.duration).run, CAPACITY_CONNECTIONS)
        own = capacity[:requests_per_sec]
        unloaded = open_loop((own * UNLOADED).round, @seconds)
        before = server_ticks
        overload = open_loop(ref[:offered_rps], @seconds)
        overload[:server_cpu_s] = ((server_ticks - before) / ProcStat::TICK).round(2)
        Log.info(format("overload %-16s capacity %5.0f  unloaded p99 %6.1f ms  goodput %5.0f/s  shed %d  p99 %7.1f ms",
                        @server.launch.spec.name, own, unloaded[:p99_ms], overload[:goodput], overload[:shed], overload[:p99_ms]))
        capacity.merge(reference: ref, capacity_rps: own, unloaded: unloaded, overload: overload,
                       max_queue_time: @server.launch.spec.name.start_with?("spindle") ? MAX_QUEUE_TIME : nil)
      end

      private

      # The server's CPU so far (its process group, in clock ticks): with
      # its CPU at capacity, what a shed costs it (Overload.shed_cost).
      def server_ticks = ProcStat.tree_ticks(@server.pgid).values.sum

      def open_loop(rate, seconds)
        r = OpenLoop.new(port: @server.launch.port, path: @scenario.path, rate: rate, seconds: seconds,
                         max_connections: MAX_CONNECTIONS, timeout: TIMEOUT, stamp: true).run
        Overload.summarize(r, rate).merge(client: "open_loop.c")
      end
    end

    # What a shed cost the server, as a share of a served request's CPU:
    # each served request costs what it did at capacity (the server's cores
    # over its req/s, wrk -c 16), and the rest of the server's CPU in the
    # overload run went to the 503s. Under L x the capacity goodput can stay
    # at g of it only while this is under (1 - g) / (L - g): 0.09 for 90 %
    # at 2x (docs/QUEUE_TIME.md). nil without the figures, or without sheds.
    def self.shed_cost(capacity_cores, capacity_rps, overload)
      cpu = overload[:server_cpu_s]
      return nil unless cpu && capacity_cores && capacity_rps.to_f.positive? && overload[:shed].to_i.positive?

      per_request = capacity_cores / capacity_rps
      ((cpu - (overload[:ok] * per_request)) / overload[:shed] / per_request).round(3)
    end

    # A client run's figures: only 2xx count as served.
    def self.summarize(result, rate)
      lat = result.ok_latencies.sort
      sent = result.ok_from_send.sort
      pick = ->(q, from = lat) { from.empty? ? nil : (from[[(q * from.size).ceil - 1, 0].max] * 1000).round(2) }
      ok = lat.size
      # Per second from the first slot to the last 2xx: a server still
      # serving the backlog after the schedule's end is serving, not idle.
      { rate: rate, seconds: result.seconds, offered: result.offered, ok: ok,
        goodput: result.last_ok ? (ok / result.last_ok).round(1) : 0.0, shed: result.statuses[503],
        client_cpu_s: result.cpu_s.round(2), last_ok_s: result.last_ok&.round(2),
        other_status: result.statuses.reject { |s, _| s.between?(200, 299) || s == 503 }.values.sum,
        timeouts: result.timeouts, errors: result.errors, late_sends: result.late_sends,
        connections_opened: result.connections_opened, wall_s: result.wall.round(2),
        p50_ms: pick.call(0.5), p99_ms: pick.call(0.99), max_ms: pick.call(1.0),
        p99_from_send_ms: pick.call(0.99, sent), max_from_send_ms: pick.call(1.0, sent) }
    end

    module Report
      include Bench::Report::Names
      module_function

      def figures(record)
        P.by_server(record) do |rounds|
          med = ->(&blk) { Stats.median(rounds.map(&blk).compact) }
          { capacity: med.call { |m| m[:capacity_rps] }, unloaded_p99: med.call { |m| m[:unloaded][:p99_ms] },
            offered: med.call { |m| m[:overload][:rate] }, goodput: med.call { |m| m[:overload][:goodput] },
            shed: med.call { |m| m[:overload][:shed] }, other: med.call { |m| m[:overload][:other_status] + m[:overload][:errors] },
            timeouts: med.call { |m| m[:overload][:timeouts] }, p50: med.call { |m| m[:overload][:p50_ms] },
            p99: med.call { |m| m[:overload][:p99_ms] }, ok: med.call { |m| m[:overload][:ok] },
            p99_send: med.call { |m| m[:overload][:p99_from_send_ms] },
            late: med.call { |m| m[:overload][:late_sends].to_f / m[:overload][:offered] },
            client_cores: med.call { |m| m[:overload][:client_cpu_s] / m[:overload][:wall_s] },
            reconnects: med.call { |m| m[:overload][:connections_opened] },
            offered_count: med.call { |m| m[:overload][:offered] }, max_queue_time: rounds.first[:max_queue_time],
            shed_cost: med.call { |m| Overload.shed_cost(m.dig(:cpu, :server_cores), m[:capacity_rps], m[:overload]) },
            rounds: rounds.size }
        end
      end

      def share(f) = f[:capacity].to_f.positive? && f[:goodput] ? f[:goodput] / f[:capacity] : nil

      # The targets of issue 68 for a shedding server; nil for the peers.
      def checks(f)
        return nil unless f[:max_queue_time]

        bound = f[:max_queue_time] * 1000 + f[:unloaded_p99].to_f
        { goodput: share(f).to_f >= 0.9, p99: f[:p99] && f[:p99] <= bound, p99_send: f[:p99_send] && f[:p99_send] <= bound, bound: bound }
      end

      def headline(record)
        parts = figures(record).map do |name, f|
          format("%s goodput %s (%s of its capacity), p99 %s ms", name, F.rps(f[:goodput]), pct(share(f)), F.ms(f[:p99]))
        end
        "At #{LOAD.round}x #{REFERENCE}'s capacity: #{parts.join('; ')}"
      end

      def pct(x) = x ? format("%.0f %%", x * 100) : "–"

      def ratio(f) = f[:capacity].to_f.positive? ? format("%.1f ×", f[:offered].to_f / f[:capacity]) : "–"

      # "the median of 3 starts (480, 513, 455)"; a record from before the runs
      # were kept: "1 run".
      def reference_runs(ref)
        runs = ref[:runs] or return "1 run"
        "the median of #{runs.size} starts (#{runs.map { |r| F.integer(r.round) }.join(', ')})"
      end

      # Runs before the C client have no name recorded: they had a Ruby one.
      def client_text(name)
        if name
          "`bench/lib/bench/clients/open_loop.c` (C, one thread, epoll, a process of its own)"
        else
          "a Ruby client in the bench process (one thread; open_loop.c replaced it on 2026-12-06)"
        end
      end

      def markdown(record, json_name, cells)
        ref = record[:measurements].find { |m| m[:reference] }&.dig(:reference) || {}
        m = record[:measurements].find { |x| x[:overload] } || {}
        seconds = m.dig(:overload, :seconds)
        head = [["Offered load", "#{F.integer(ref[:offered_rps].to_i)} req/s for every server: #{LOAD} × #{ref[:server]}'s capacity measured " \
                                 "at the start of the run (starts of its own, 1 process, #{record[:settings][:threads_per_process]} threads, " \
                                 "unpaced wrk -c #{CAPACITY_CONNECTIONS}, #{reference_runs(ref)}: " \
                                 "**#{F.rps(ref[:capacity])} req/s**), for #{seconds} s"],
                ["Capacity", "each server's own: unpaced wrk -c #{CAPACITY_CONNECTIONS} for #{record[:settings][:duration_s]} s after its warm-up"],
                ["Unloaded p99", "the open-loop client at #{(UNLOADED * 100).round} % of the server's own capacity, #{seconds} s"],
                ["Client", "#{client_text(m.dig(:overload, :client))}, on the same 2 cores " \
                           "as the server and PostgreSQL: request n due at start + n ÷ rate, latency counted from that slot, " \
                           "up to #{MAX_CONNECTIONS} keep-alive connections, a request not answered #{TIMEOUT} s after its slot " \
                           "is a timeout. Each request carries `X-Request-Start` stamped at its send, as a proxy in front would stamp it. " \
                           "Only 2xx count as served: goodput = 2xx ÷ the time from the first slot to the last 2xx; p50/p99 are of " \
                           "the 2xx, from the slot (the user's view, the client's own queue included) and from the send (the server's " \
                           "and the kernel's queues only). `sends > 1 ms late` and `client cores` say how well the client held the rate: " \
                           "it shares the cores, so a late send is the machine's, not necessarily the server's"],
                ["Shedding", "Spindle with `--max-queue-time #{MAX_QUEUE_TIME} --trusted-proxies 127.0.0.1/32` (docs/QUEUE_TIME.md: " \
                             "it counts the wait from the stamp; while the queue stands, the newest goes first); spindle-fibers with " \
                             "`--app-concurrency #{AppDb::POOL}`, the apps' database pool, so its requests wait before the app. " \
                             "The peers have no equivalent and run as they come. The client plays a trusted proxy, so a shed " \
                             "answer keeps its connection (docs/QUEUE_TIME.md: a client's would close)"]]
        rows = cells.map do |name, f|
          [name, F.rps(f[:capacity]), F.ms(f[:unloaded_p99]), F.integer(f[:offered].to_i), F.rps(f[:goodput]), pct(share(f)),
           F.integer(f[:shed].to_i), F.integer(f[:other].to_i), F.integer(f[:timeouts].to_i), F.ms(f[:p50]), F.ms(f[:p99]),
           F.ms(f[:p99_send]), f[:shed_cost] ? format("%.2f", f[:shed_cost]) : "–", pct(f[:late]), format("%.2f", f[:client_cores].to_f),
           F.integer(f[:reconnects].to_i), f[:rounds]]
        end
        table = F.table(["server", "capacity req/s", "unloaded p99 ms", "offered req/s", "goodput (2xx/s)", "of its capacity",
                         "shed (503)", "other errors", "timeouts / unsent", "p50 ms (2xx, from slot)", "p99 ms (2xx, from slot)",
                         "p99 ms (2xx, from send)", "a shed, of a served request's CPU", "sends > 1 ms late", "client cores", "connections opened", "rounds"], rows)
        [P.title(record, json_name, goal_from: "issue 68"), P.run_table(record, P.load_rows(record) + head),
         "## Under #{LOAD.round}× load\n\n#{table}", "## Targets\n\n#{target_lines(cells).join("\n")}",
         "Each figure is the median of the rounds.", P.failures(record),
         P.commands(record, ["# reference: #{ref[:command]}",
                             *record[:measurements].reject { |x| x[:failed] }.map { |x| "#{x[:wrk]}   # capacity" }.uniq])]
          .compact.join("\n\n") << "\n"
      end

      def target_lines(cells)
        cells.filter_map do |name, f|
          c = checks(f) or next
          "- **#{name}**, offered #{ratio(f)} its capacity: goodput #{pct(share(f))} of its capacity (target ≥ 90 %): " \
            "**#{c[:goodput] ? 'met' : 'not met'}**; " \
            "p99 of served #{F.ms(f[:p99])} ms from the slot, #{F.ms(f[:p99_send])} ms from the send (target ≤ #{F.ms(c[:bound])} ms " \
            "= max-queue-time + its unloaded p99): **#{c[:p99] ? 'met' : 'not met'}** from the slot, " \
            "**#{c[:p99_send] ? 'met' : 'not met'}** from the send#{shed_cost_text(f)}"
        end
      end

      # At 2x the capacity, 90 % goodput needs a shed under (1 - 0.9) / (2 - 0.9) of a request.
      def shed_cost_text(f)
        return "" unless f[:shed_cost]

        format("; a shed cost the server %.2f of a served request's CPU (90 %% goodput at 2× needs under %.2f)",
               f[:shed_cost], (1 - 0.9) / (LOAD - 0.9))
      end

      def chart(record, cells)
        chart = P.chart(record, "Twice the capacity, offered at a fixed rate",
                        "#{record[:machine][:nproc]} cores shared with the client · 1 process · Spindle --max-queue-time #{MAX_QUEUE_TIME}",
                        y_label: "median of rounds", x_label: "")
        color = ->(n) { Bench::Report::Chart::COLORS[n] }
        chart.panel("req/s (higher is better)", groups: ["own capacity", "goodput (2xx) at 2× load"],
                                                 series: cells.map { |n, f| { name: n, color: color.call(n), values: [f[:capacity], f[:goodput]] } })
        chart.panel("ms, 2xx only (lower is better)", groups: ["unloaded p99", "p99 at 2× load"],
                                                       series: cells.map { |n, f| { name: n, color: color.call(n), values: [f[:unloaded_p99], f[:p99]] } })
        chart.render
      end
    end
  end
end

{ "overload" => ["blog.ru", "/", "apps/blog.ru, GET / (one query, a 15 KB ERB page)", nil],
  "overload-rails" => ["../../test/apps/rails/config.ru", "/posts", "test/apps/rails, GET /posts (Rails 7.2, 20 rows)", true] }
  .each do |name, (app, path, what, warm_pools)|
  Bench::Scenario.define(
    name: name,
    title: "Overload: #{what} at twice the capacity",
    description: "#{what}, one process, offered at #{Bench::Overload::LOAD} × spindle-threads' capacity at a fixed rate to every server; " \
                 "Spindle sheds with --max-queue-time #{Bench::Overload::MAX_QUEUE_TIME}. Goodput and the p99 of the requests served.",
    goal: "goodput ≥ 90 % of its own capacity, and the p99 of the requests it serves within max-queue-time plus its " \
          "unloaded p99, where the peers' p99 grows with the backlog (issue 68).",
    app: app,
    path: path,
    connections: [Bench::Overload::CAPACITY_CONNECTIONS],
    processes: [1],
    servers: %w[spindle-threads spindle-fibers puma falcon],
    # The client stamps X-Request-Start as a proxy in front would; Spindle
    # trusts it from loopback (the peers ignore it).
    # Both apps hold DB_POOL database connections: past that many, fibers
    # would wait inside the app, where shedding cannot see them.
    server_args: { "spindle-*" => ["--max-queue-time", Bench::Overload::MAX_QUEUE_TIME, "--trusted-proxies", "127.0.0.1/32"],
                   "spindle-fibers" => ["--app-concurrency", Bench::AppDb::POOL] },
    gemfile: Bench::Paths::APPS_GEMFILE,
    env: Bench::AppDb.env,
    trial: Bench::Overload::Trial,
    # The reference starts before any other server: a Spindle threads server
    # left idle beside them measured 215 req/s against the reference's
    # 286-382, its CPU pinning given up while they loaded its CPU.
    prepare: ->(settings, scenario) { Bench::Overload.reference(settings, scenario) },
    report: Bench::Overload::Report,
    warmup: 10,
    warm_pools: warm_pools,
    quick: { servers: %w[spindle-threads puma], budget_s: 120 }
  )
end
