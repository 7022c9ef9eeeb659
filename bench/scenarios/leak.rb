# frozen_string_literal: true

require "time"
require "json"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/deadline"
require_relative "../lib/bench/http_probe"
require_relative "../lib/bench/machine"
require_relative "../lib/bench/versions"
require_relative "../lib/bench/report/format"
require_relative "../lib/svg_chart"

module Bench
  # Issue 4, "What must be shown" #4: 1,000,000 requests through one worker
  # (`spindle -w 1`, threads engine) of the hello app, RSS sampled every
  # ~50,000 requests: flat after warm-up. Beside it the seed's control (shared
  # seed 000): the same app extending an object per request, and
  # `Object.new.extend(Module.new)` per request. RubyVM.stat[:class_serial] at
  # start and end for each. wrk runs for a bounded time and is stopped once
  # spindlectl stats (the control socket) counts the target; the count reached
  # is what is reported.
  class Leak
    F = Report::Format
    MODES = {
      "hello" => "hello app (nothing per request)",
      "extend" => "control: env.extend(LeakHandler) per request (the seed's pattern)",
      "extend_new" => "control: Object.new.extend(Module.new) per request"
    }.freeze
    COLORS = { "hello" => "#3182bd", "extend" => "#d62728", "extend_new" => "#ff7f0e" }.freeze
    CONNECTIONS = 16

    def self.run(settings) = new(settings).run

    def initialize(settings)
      @settings = settings
      @target = settings.quick ? 20_000 : 1_000_000
      @every = settings.quick ? 2_000 : 50_000
      @max_seconds = settings.quick ? 8 : 240
    end

    def run
      started = Time.now
      source = Versions.spindle_source
      runs = MODES.keys.map { |mode| skipped(mode) || one(mode) }
      {
        scenario: { name: "leak", title: TITLE, description: DESCRIPTION, goal: GOAL, app: "bench/apps/leak.ru", path: "/" },
        started_at: started.iso8601, finished_at: Time.now.iso8601, machine: Machine.describe,
        settings: { quick: @settings.quick, target_requests: @target, sample_every_requests: @every, max_seconds: @max_seconds,
                    connections: CONNECTIONS, threads_per_process: 5, workers: 1, processes: [1] },
        load_generator: { tool: "wrk #{Versions.command(%w[wrk -v], /wrk (\S+)/)}", threads: 1, shares_cores: true },
        servers: [{ name: "spindle-threads", family: "spindle", version: Versions.spindle }],
        runs: runs, measurements: [],
        spindle_source: { at_start: source, at_end: Versions.spindle_source, changed: Versions.spindle_source != source }
      }
    end

    private

    # Past the run's deadline (or the --quick budget) nothing new starts.
    def skipped(mode)
      Deadline.skipped(@settings, "leak #{mode}", { mode: mode, label: MODES[mode], samples: [] })
    end

    def one(mode)
      target = Memory::Target.new(name: "leak", app: "leak.ru", path: "/", expect_body: "Hello World",
                                  env: -> { { "LEAK_MODE" => mode } })
      control = nil
      server = Memory.start(name: "leak-#{mode}", runtime: :spindle, target: target, threads: 5) do |l|
        control = File.join(l.dir, "control.sock")
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", l.thread_range, "-w", "1",
         "--control", "unix://#{control}", "-b", "tcp://#{l.address}", "-q", l.rackup]
      end
      worker = Memory.wait_for(20) { Memory.control(control, "stats")["workers"].first&.dig("pid") }
      vm_start = vmstat(server)
      start_mem = Memory.rollup(worker)
      samples = [[0, Memory.rss(worker)]]
      serials = [[0, vm_start.dig(:vm, :class_serial).to_i]] # RubyVM.stat[:class_serial] at each sample
      t0 = Memory.now
      pid, argv = Memory.wrk_spawn(server.launch.url("/"), connections: CONNECTIONS, duration: @max_seconds)
      next_mark = @every
      requests = 0
      until Memory.now - t0 > @max_seconds + 5
        sleep 0.25
        stats = Memory.control(control, "stats")
        w = stats["workers"].find { |x| x["pid"] == worker } or raise "worker #{worker} gone: #{stats['workers'].map { |x| x['pid'] }}"
        requests = w["requests"].to_i
        if requests >= next_mark
          samples << [requests, Memory.rss(worker)]
          serials << [requests, vmstat(server).dig(:vm, :class_serial).to_i]
          next_mark = (requests / @every + 1) * @every
        end
        break if requests >= @target
        break unless Process.wait2(pid, Process::WNOHANG).nil?
      end
      elapsed = Memory.now - t0
      Memory.wrk_kill(pid)
      sleep 1.2 # one more check-in so the final count is current
      requests = Memory.control(control, "stats")["workers"].find { |x| x["pid"] == worker }&.dig("requests").to_i
      vm_end = vmstat(server)
      end_mem = Memory.rollup(worker)
      samples << [requests, end_mem[:rss]] if samples.last.first < requests
      serials << [requests, vm_end.dig(:vm, :class_serial).to_i] if serials.last.first < requests
      r = { mode: mode, label: MODES[mode], command: server.command_line, wrk: argv.join(" ").sub(%r{127\.0\.0\.1:\d+}, "127.0.0.1:PORT"),
            worker_pid: worker, requests: requests, seconds: elapsed.round(1), reached_target: requests >= @target,
            samples: samples, class_serials: serials, start_memory: start_mem, end_memory: end_mem, vm_start: vm_start, vm_end: vm_end }
      Log.info(format("leak %-10s %9d requests in %5.1f s  RSS %6.1f → %6.1f MB  class_serial %d → %d", mode, requests, elapsed,
                      Memory.mb(samples.first.last), Memory.mb(samples.last.last), vm_start.dig(:vm, :class_serial).to_i,
                      vm_end.dig(:vm, :class_serial).to_i))
      r
    rescue StandardError, ServerProcess::StartFailed => e
      Log.warn("leak #{mode}: #{e.class}: #{e.message}")
      { mode: mode, label: MODES[mode], failed: "#{e.class}: #{e.message}", samples: [] }
    ensure
      Memory.wrk_kill(pid) if pid
      server&.stop
    end

    def vmstat(server)
      response = HttpProbe.get(server.launch.host, server.launch.port, "/vmstat", timeout: 5)
      raise "GET /vmstat failed" unless response&.status == 200

      JSON.parse(response.body, symbolize_names: true)
    end

    TITLE = "1,000,000 requests through one worker: RSS flat, class_serial flat"
    DESCRIPTION = "`bin/spindle -w 1 --engine threads -t 5:5` serving `bench/apps/leak.ru`, loaded by `wrk -t 1 -c 16` (keep-alive) " \
                  "until the worker has served the target count (read from the control socket's stats; wrk is bounded by time). " \
                  "The worker's RSS is sampled each time the count passes a multiple of the sample step. Three modes of the " \
                  "same app: hello, and two controls that extend an object per request as in the seed."
    GOAL = "1,000,000 requests through one worker: RSS sampled, flat after warm-up; the seed's `extend`-per-request app " \
           "shown growing beside it as the control."

    # ---- report ---------------------------------------------------------

    def self.ok(record) = record[:runs].reject { |r| r[:failed] }

    # RSS growth after warm-up: from the first sample at or past 10 % of the
    # requests served to the last.
    def self.growth(run)
      samples = run[:samples]
      warm = samples.find { |n, _| n >= run[:requests] * 0.1 } || samples.first
      [warm, samples.last]
    end

    def self.headline(record)
      parts = ok(record).map do |r|
        (from, to) = growth(r)
        format("%s %+.1f MB after warm-up (%s requests), class_serial +%s", r[:mode], (to.last - from.last) / 1048576.0,
               F.integer(r[:requests]), F.integer(r.dig(:vm_end, :vm, :class_serial).to_i - r.dig(:vm_start, :vm, :class_serial).to_i))
      end
      parts.join("; ")
    end

    def self.render(record, json_name) = [markdown(record, json_name), chart(record)]

    def self.mb(bytes) = bytes ? format("%.1f", bytes / 1048576.0) : "–"

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      rows = ok(record).map do |r|
        (from, to) = growth(r)
        serial = r.dig(:vm_end, :vm, :class_serial).to_i - r.dig(:vm_start, :vm, :class_serial).to_i
        per_kreq = (to.last - from.last) / 1024.0 / ((to.first - from.first).nonzero? || 1) * 1000
        [r[:label], F.integer(r[:requests]) + (r[:reached_target] ? "" : " (target not reached)"), format("%.0f s", r[:seconds]),
         mb(r[:samples].first.last), mb(from.last), mb(to.last), format("%+.1f MB (%+.2f KB per 1,000 requests)", (to.last - from.last) / 1048576.0, per_kreq),
         "#{F.integer(r.dig(:vm_start, :vm, :class_serial).to_i)} → #{F.integer(r.dig(:vm_end, :vm, :class_serial).to_i)} (+#{F.integer(serial)})",
         "#{F.integer(r.dig(:vm_start, :gc, :heap_live_slots).to_i)} → #{F.integer(r.dig(:vm_end, :gc, :heap_live_slots).to_i)}",
         "#{mb(r.dig(:start_memory, :uss))} → #{mb(r.dig(:end_memory, :uss))}"]
      end
      samples = ok(record).map do |r|
        "**#{r[:mode]}**: " + r[:samples].map { |n, rss| "#{F.integer(n)}: #{mb(rss)}" }.join(" · ")
      end
      failed = record[:runs].select { |r| r[:failed] }.map { |r| "- #{r[:mode]}: #{r[:failed]}" }
      <<~MD
        # #{record[:scenario][:title]} — `bench/run leak`

        > Generated by `bench/run leak` from [data/#{json_name}](data/#{json_name}); do not edit by hand
        > (`bench/run leak --render` redraws from the newest data).#{"\n>\n> **Quick run** (`--quick`): a smoke test, not a result." if s[:quick]}

        #{record[:scenario][:description]}

        **What Spindle must show** (issue 4): #{record[:scenario][:goal]}

        ![leak chart](leak.svg)

        ## Run

        #{F.table(%w[what value], [
          ['Date', "#{record[:started_at]} to #{record[:finished_at]}"],
          ['Machine', "#{m[:nproc]} cores (#{m[:cpu]}), #{m[:memory_gib]} GiB, #{m[:kernel]}, #{m[:os]}"],
          ['Ruby', "#{m[:ruby]}; YJIT off"],
          ['Target', "#{F.integer(s[:target_requests])} requests per app, RSS sampled every ~#{F.integer(s[:sample_every_requests])}; wrk bounded at #{s[:max_seconds]} s"],
          ['Load', "#{record[:load_generator][:tool]}, 1 thread, -c #{s[:connections]}, keep-alive, sharing the #{m[:nproc]} cores"],
          ['Spindle source', "lib/ext/bin digest #{record.dig(:spindle_source, :at_start)}#{record.dig(:spindle_source, :changed) ? ' (**changed during the run**)' : ', unchanged during the run'}"]
        ])}

        ## Result

        #{F.table(['app', 'requests served', 'time', 'RSS at start (MB)', 'RSS after warm-up (MB)', 'RSS at end (MB)',
                   'growth after warm-up', 'RubyVM.stat[:class_serial]', 'GC heap_live_slots', 'USS (MB)'], rows)}

        - "after warm-up": the first sample at or past 10 % of the requests served. RSS is the worker's, from
          /proc/PID/status at each sample (smaps_rollup at the end); the request count is the worker's own
          (`spindlectl stats`, updated at its check-in every second, so a sample may lag by up to a second of requests).
        - `class_serial` counts classes created (a singleton class per `extend`); `/vmstat` is read once at start and once
          at the end (those two requests are not in the count's deltas of interest).
        - On Ruby ≥ 2.x singleton classes are garbage collected, so the seed's 1.9.1 leak of RSS need not reappear; the
          class_serial column shows what the controls create per request either way.

        ## Samples (requests served: RSS MB)

        #{samples.join("\n\n")}
        #{"\n## Failed\n\n#{failed.join("\n")}\n" unless failed.empty?}
        ## Commands

        ```sh
        #{ok(record).map { |r| "# #{r[:mode]}\n#{r[:command]}" }.join("\n")}
        #{ok(record).first&.dig(:wrk)}   # stopped once the count is reached
        ```
      MD
    end

    def self.chart(record)
      s = record[:settings]
      chart = SvgChart::Lines.new(title: "Worker RSS over #{F.integer(s[:target_requests])} requests (bench/run leak)",
                               subtitle: "#{record[:started_at][0, 10]} · spindle -w 1 --engine threads -t 5:5 · wrk -c #{s[:connections]}" \
                                         "#{' · QUICK' if s[:quick]}",
                               y_label: "worker RSS (MB)", x_label: "requests served by the worker")
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
  end
end

Bench::Scenario.define(
  name: "leak",
  title: Bench::Leak::TITLE,
  description: Bench::Leak::DESCRIPTION,
  goal: Bench::Leak::GOAL,
  app: "leak.ru",
  path: "/",
  processes: [1],
  connections: [16],
  custom: Bench::Leak,
  report: Bench::Leak,
  quick: {} # one server: the trial's own quick sizes (20,000 requests or 8 s per mode)
)
