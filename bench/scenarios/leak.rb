# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/http_probe"

module Bench
  # Issue 4, "What must be shown" #4, with the seed's control (shared seed
  # 000) beside it; the description: below says how. The count reached is
  # what is reported: wrk is bounded by time, and stopped once the worker's
  # own count (the control socket's stats) reaches the target.
  class Leak < CustomScenario
    MODES = {
      "hello" => "hello app (nothing per request)",
      "extend" => "control: env.extend(LeakHandler) per request (the seed's pattern)",
      "extend_new" => "control: Object.new.extend(Module.new) per request"
    }.freeze
    COLORS = { "hello" => "#3182bd", "extend" => "#d62728", "extend_new" => "#ff7f0e" }.freeze
    CONNECTIONS = 16

    def initialize(scenario, settings)
      super
      @target = settings.quick ? 20_000 : 1_000_000
      @every = settings.quick ? 2_000 : 50_000
      @max_seconds = settings.quick ? 8 : 240
    end

    private

    def trials
      { runs: MODES.map { |mode, label| trial(mode, { mode: mode, label: label, samples: [] }) { one(mode) } } }
    end

    def settings_record
      { target_requests: @target, sample_every_requests: @every, max_seconds: @max_seconds,
        connections: CONNECTIONS, threads_per_process: 5, workers: 1, processes: [1] }
    end

    def one(mode)
      target = Scenario.new(name: "leak", app: "leak.ru", path: "/", expect_body: "Hello World", env: -> { { "LEAK_MODE" => mode } })
      server = Memory.start(name: "leak-#{mode}", runtime: :spindle, target: target, threads: 5) do |l|
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", l.thread_range, "-w", "1",
         "--control", "unix://#{File.join(l.dir, 'control.sock')}", "-b", "tcp://#{l.address}", "-q", l.rackup]
      end
      control = File.join(server.launch.dir, "control.sock")
      worker = Child.wait_for(20) { Memory.control(control, "stats")["workers"].first&.dig("pid") }
      requests = -> { Memory.control(control, "stats")["workers"].find { |w| w["pid"] == worker }&.dig("requests") }
      vm_start = vmstat(server)
      start_mem = Memory.rollup(worker)
      samples = [[0, Memory.rss(worker)]]
      serials = [[0, vm_start.dig(:vm, :class_serial).to_i]] # RubyVM.stat[:class_serial] at each sample
      t0 = Child.now
      load = Memory.wrk(server.launch.url("/"), connections: CONNECTIONS, duration: @max_seconds)
      wrk = load.spawn(File::NULL)
      next_mark = @every
      until Child.now - t0 > @max_seconds + 5
        sleep 0.25
        served = requests.call or raise "worker #{worker} gone"
        if served >= next_mark
          samples << [served, Memory.rss(worker)]
          serials << [served, vmstat(server).dig(:vm, :class_serial).to_i]
          next_mark = (served / @every + 1) * @every
        end
        break if served >= @target || Process.wait2(wrk, Process::WNOHANG)
      end
      elapsed = Child.now - t0
      Child.kill(wrk)
      sleep 1.2 # one more check-in so the final count is current
      served = requests.call.to_i
      vm_end = vmstat(server)
      end_mem = Memory.rollup(worker)
      samples << [served, end_mem[:rss]] if samples.last.first < served
      serials << [served, vm_end.dig(:vm, :class_serial).to_i] if serials.last.first < served
      Log.info(format("leak %-10s %9d requests in %5.1f s  RSS %6.1f → %6.1f MB  class_serial %d → %d", mode, served, elapsed,
                      Memory.mb(samples.first.last), Memory.mb(samples.last.last), vm_start.dig(:vm, :class_serial).to_i,
                      vm_end.dig(:vm, :class_serial).to_i))
      { command: server.command_line, wrk: WrkTrial.command_line(load.argv), worker_pid: worker, requests: served,
        seconds: elapsed.round(1), reached_target: served >= @target, samples: samples, class_serials: serials,
        start_memory: start_mem, end_memory: end_mem, vm_start: vm_start, vm_end: vm_end }
    ensure
      Child.kill(wrk) if wrk
      server&.stop
    end

    def vmstat(server)
      response = HttpProbe.get(server.launch.host, server.launch.port, "/vmstat", timeout: 5)
      raise "GET /vmstat failed" unless response&.status == 200

      JSON.parse(response.body, symbolize_names: true)
    end

    # ---- report ---------------------------------------------------------

    # RSS growth after warm-up: from the first sample at or past 10 % of the
    # requests served to the last.
    def self.growth(run)
      samples = run[:samples]
      [samples.find { |n, _| n >= run[:requests] * 0.1 } || samples.first, samples.last]
    end

    def self.serial(r, at) = r.dig(at, :vm, :class_serial).to_i

    def self.headline(record)
      ok(record).map do |r|
        from, to = growth(r)
        format("%s %+.1f MB after warm-up (%s requests), class_serial +%s", r[:mode], (to.last - from.last) / 1048576.0,
               F.integer(r[:requests]), F.integer(serial(r, :vm_end) - serial(r, :vm_start)))
      end.join("; ")
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      samples = ok(record).map { |r| "**#{r[:mode]}**: " + r[:samples].map { |n, rss| "#{F.integer(n)}: #{mb(rss)}" }.join(" · ") }
      commands = ok(record).map { |r| "# #{r[:mode]}\n#{r[:command]}" } + ["#{ok(record).first&.dig(:wrk)}   # stopped once the count is reached"]
      P.page(P.title(record, json_name, goal_from: "issue 4"),
             P.run_table(record, [
               ["Target", "#{F.integer(s[:target_requests])} requests per app, RSS sampled every ~#{F.integer(s[:sample_every_requests])}; wrk bounded at #{s[:max_seconds]} s"],
               ["Load", "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, keep-alive, sharing the #{m[:nproc]} cores"]
             ]),
             "## Result\n\n#{result_table(record)}\n\n#{NOTES}",
             "## Samples (requests served: RSS MB)\n\n#{samples.join("\n\n")}",
             P.listing("Failed", P.failed(record[:runs]) { |r| r[:mode] }),
             "## Commands\n\n#{P.sh(commands)}")
    end

    def self.result_table(record)
      rows = ok(record).map do |r|
        from, to = growth(r)
        per_kreq = (to.last - from.last) / 1024.0 / ((to.first - from.first).nonzero? || 1) * 1000
        [r[:label], F.integer(r[:requests]) + (r[:reached_target] ? "" : " (target not reached)"), format("%.0f s", r[:seconds]),
         mb(r[:samples].first.last), mb(from.last), mb(to.last), format("%+.1f MB (%+.2f KB per 1,000 requests)", (to.last - from.last) / 1048576.0, per_kreq),
         "#{F.integer(serial(r, :vm_start))} → #{F.integer(serial(r, :vm_end))} (+#{F.integer(serial(r, :vm_end) - serial(r, :vm_start))})",
         "#{F.integer(r.dig(:vm_start, :gc, :heap_live_slots).to_i)} → #{F.integer(r.dig(:vm_end, :gc, :heap_live_slots).to_i)}",
         "#{mb(r.dig(:start_memory, :uss))} → #{mb(r.dig(:end_memory, :uss))}"]
      end
      F.table(["app", "requests served", "time", "RSS at start (MB)", "RSS after warm-up (MB)", "RSS at end (MB)",
               "growth after warm-up", "RubyVM.stat[:class_serial]", "GC heap_live_slots", "USS (MB)"], rows)
    end

    def self.chart(record)
      s = record[:settings]
      chart = P.chart(record, "Worker RSS over #{F.integer(s[:target_requests])} requests",
                      "spindle -w 1 --engine threads -t 5:5 · wrk -c #{s[:connections]}",
                      kind: SvgChart::Lines, y_label: "worker RSS (MB)", x_label: "requests served by the worker")
      chart.panel("RSS sampled every ~#{F.integer(s[:sample_every_requests])} requests", series: ok(record).map { |r|
        { name: r[:label], color: COLORS[r[:mode]], points: r[:samples].map { |n, rss| [n, (rss / 1048576.0).round(1)] } }
      })
      with_serials = ok(record).select { |r| r[:class_serials] }
      unless with_serials.empty?
        chart.panel("RubyVM.stat[:class_serial] (GET /vmstat at each sample)", y_label: "class_serial", series: with_serials.map { |r|
          { name: r[:label], color: COLORS[r[:mode]], points: r[:class_serials] }
        })
      end
      chart.render
    end

    NOTES = <<~MD.chomp
      - "after warm-up": the first sample at or past 10 % of the requests served. RSS is the worker's, from
        /proc/PID/status at each sample (smaps_rollup at the end); the request count is the worker's own
        (`spindlectl stats`, updated at its check-in every second, so a sample may lag by up to a second of requests).
      - `class_serial` counts classes created (a singleton class per `extend`); `/vmstat` is read once at start and once
        at the end (those two requests are not in the count's deltas of interest).
      - On Ruby ≥ 2.x singleton classes are garbage collected, so the seed's 1.9.1 leak of RSS need not reappear; the
        class_serial column shows what the controls create per request either way.
    MD
  end
end

Bench::Scenario.define(
  name: "leak",
  title: "1,000,000 requests through one worker: RSS flat, class_serial flat",
  description: "`bin/spindle -w 1 --engine threads -t 5:5` serving `bench/apps/leak.ru`, loaded by `wrk -t 1 -c 16` (keep-alive) " \
               "until the worker has served the target count (read from the control socket's stats; wrk is bounded by time). " \
               "The worker's RSS is sampled each time the count passes a multiple of the sample step. Three modes of the " \
               "same app: hello, and two controls that extend an object per request as in the seed.",
  goal: "1,000,000 requests through one worker: RSS sampled, flat after warm-up; the seed's `extend`-per-request app " \
        "shown growing beside it as the control.",
  app: "leak.ru",
  path: "/",
  processes: [1],
  connections: [16],
  custom: Bench::Leak,
  quick: {} # one server: the trial's own quick sizes (20,000 requests or 8 s per mode)
)
