# frozen_string_literal: true

require "time"
require "json"
require_relative "../lib/bench/memory"
require_relative "../lib/bench/deadline"
require_relative "../lib/bench/machine"
require_relative "../lib/bench/versions"
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/format"
require_relative "../lib/svg_chart"

module Bench
  # Issue 4, "What must be shown" #3: the seed's arena test (shared seed 003):
  # 20 threads each allocating 1,000 × 1,000-character strings in a loop, RSS
  # sampled over time, with glibc's default arena count (MALLOC_ARENA_MAX
  # unset), MALLOC_ARENA_MAX=2 (Spindle's default) and jemalloc (Debian's
  # libjemalloc.so.2 preloaded). Run two ways: the plain seed script
  # (bench/apps/arenas_seed.rb, a bounded loop count), and as a Spindle app
  # (bench/apps/arenas.ru, threads engine, 20 threads, wrk -c 20 for a bounded
  # time, each request one slice of the loop). Configurations interleave
  # within each round; nothing runs at the same time as anything else.
  class Arenas
    F = Report::Format
    JEMALLOC = Dir["/usr/lib/*/libjemalloc.so.2"].first
    SAMPLE_EVERY = 0.1
    COLORS = { "glibc default (MALLOC_ARENA_MAX unset)" => "#d62728", "MALLOC_ARENA_MAX=2 (Spindle's default)" => "#3182bd",
               "jemalloc (LD_PRELOAD libjemalloc.so.2)" => "#2ca02c" }.freeze
    CONFIGS = COLORS.keys.freeze

    def self.run(settings) = new(settings).run

    def initialize(settings)
      @settings = settings
      @iterations = settings.quick ? 30 : 500
      @duration = settings.quick ? 2 : 25
      @rounds = settings.quick ? 1 : [settings.rounds, 2].min
    end

    def run
      abort "bench: arenas needs libjemalloc.so.2: apt-get install -y libjemalloc2" unless JEMALLOC
      started = Time.now
      source = Versions.spindle_source
      runs = []
      @rounds.times do |round|
        CONFIGS.each { |config| runs << (skipped("script", config, round + 1) || script_run(config, round + 1)) }
        CONFIGS.each { |config| runs << (skipped("spindle", config, round + 1) || spindle_run(config, round + 1)) }
      end
      {
        scenario: { name: "arenas", title: TITLE, description: DESCRIPTION, goal: GOAL, app: "bench/apps/arenas.ru", path: "/" },
        started_at: started.iso8601, finished_at: Time.now.iso8601, machine: Machine.describe,
        settings: { quick: @settings.quick, threads: 20, script_iterations_per_thread: @iterations, spindle_duration_s: @duration,
                    spindle_connections: 20, per_request_arrays: 10, sample_every_s: SAMPLE_EVERY, rounds: @rounds,
                    jemalloc: JEMALLOC, jemalloc_package: Versions.command(%w[dpkg-query -W libjemalloc2], /libjemalloc2\s+(\S+)/),
                    glibc: Versions.command(%w[ldd --version], /(\d+\.\d+)/), processes: [1] },
        servers: [{ name: "spindle-threads", family: "spindle", version: Versions.spindle }],
        runs: runs, measurements: [],
        spindle_source: { at_start: source, at_end: Versions.spindle_source, changed: Versions.spindle_source != source }
      }
    end

    private

    # Past the run's deadline (or the --quick budget) nothing new starts.
    def skipped(kind, config, round)
      Deadline.skipped(@settings, "arenas #{kind} #{config}", { kind: kind, config: config, round: round, samples: [] })
    end

    # The environment each configuration starts with (BASE_ENV clears the rest).
    def script_env(config)
      base = ServerProcess::BASE_ENV.merge("MALLOC_ARENA_MAX" => nil, "LD_PRELOAD" => nil,
                                           "ARENAS_ITERATIONS" => @iterations.to_s, "ARENAS_THREADS" => "20")
      case config
      when /unset/ then base
      when /=2/ then base.merge("MALLOC_ARENA_MAX" => "2")
      else base.merge("LD_PRELOAD" => JEMALLOC)
      end
    end

    def script_run(config, round)
      env = script_env(config)
      out = File.join(Paths::TMP, "arenas-script.out")
      argv = [RbConfig.ruby, File.join(Paths::APPS, "arenas_seed.rb")]
      t0 = Memory.now
      pid = Process.spawn(env, *argv, out: out, err: out, in: File::NULL, pgroup: true)
      samples = sample_until_exit(pid, t0, deadline: 300)
      result = File.read(out)[/^ARENAS_RESULT (\{.*\})$/, 1]
      line = env.select { |k, v| v && %w[MALLOC_ARENA_MAX LD_PRELOAD ARENAS_ITERATIONS ARENAS_THREADS].include?(k) }
                .map { |k, v| "#{k}=#{v}" }.join(" ")
      r = { kind: "script", config: config, round: round, command: "#{line} ruby bench/apps/arenas_seed.rb",
            samples: samples, result: result && JSON.parse(result, symbolize_names: true),
            failed: (result ? nil : "no result: #{File.read(out)[-300..]}") }
      log(r)
      r
    end

    def sample_until_exit(pid, t0, deadline:)
      samples = []
      until Memory.now - t0 > deadline
        rss = Memory.rss(pid)
        samples << [(Memory.now - t0).round(2), rss] if rss&.positive?
        _, status = Process.wait2(pid, Process::WNOHANG)
        return samples if status

        sleep SAMPLE_EVERY
      end
      Process.kill(:KILL, -pid)
      Process.wait(pid)
      samples
    end

    def spindle_run(config, round)
      extra = case config
              when /unset/ then { "SPINDLE_MEMORY_SET" => "1" } # Spindle then leaves the allocator environment as it is
              else {}
              end
      target = Memory::Target.new(name: "arenas", app: "arenas.ru", path: "/", expect_body: "allocated",
                                  env: -> { { "MALLOC_ARENA_MAX" => nil, "LD_PRELOAD" => nil }.merge(extra) })
      server = Memory.start(name: "arenas-spindle", runtime: :spindle, target: target, threads: 20) do |l|
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", "20:20", *(config =~ /jemalloc/ ? %w[--allocator jemalloc] : []),
         "-b", "tcp://#{l.address}", "-q", l.rackup]
      end
      environ = Memory.environ(server.pid)
      checked = { malloc_arena_max: environ["MALLOC_ARENA_MAX"], ld_preload: environ["LD_PRELOAD"],
                  allocator_mapped: Memory.allocator(server.pid), threads_in_process: Dir["/proc/#{server.pid}/task/*"].size }
      t0 = Memory.now
      samples = []
      sampler = Thread.new do
        loop do
          rss = Memory.rss(server.pid) or break
          samples << [(Memory.now - t0).round(2), rss]
          sleep SAMPLE_EVERY
        end
      end
      wrk = Memory.wrk_run(server.launch.url("/"), connections: 20, duration: @duration, timeout: 30)
      sleep 1 # one more second of samples after the load: what stays resident
      sampler.kill
      r = { kind: "spindle", config: config, round: round, command: server.command_line, checked: checked,
            samples: samples, wrk: wrk,
            result: { peak_rss: samples.map(&:last).max, final_rss: samples.last&.last, requests: wrk[:requests],
                      requests_per_sec: wrk[:requests_per_sec] } }
      log(r)
      r
    rescue StandardError, ServerProcess::StartFailed => e
      Log.warn("arenas spindle #{config}: #{e.class}: #{e.message}")
      { kind: "spindle", config: config, round: round, failed: "#{e.class}: #{e.message}", samples: [] }
    ensure
      sampler&.kill
      server&.stop
    end

    def log(r)
      res = r[:result] || {}
      Log.info(format("arenas %-7s round %d %-42s peak %6.0f MB  final %6.0f MB%s", r[:kind], r[:round], r[:config],
                      Memory.mb(res[:peak_rss].to_i), Memory.mb(res[:final_rss].to_i),
                      r[:checked] ? "  (#{r[:checked].to_a.map { |k, v| "#{k}=#{v.inspect}" }.join(' ')})" : ""))
    end

    TITLE = "glibc arenas: RSS over time, 20 allocating threads"
    DESCRIPTION = "The seed's arena test: 20 threads, each allocating a 1,000-element array of 1,000-character strings " \
                  "in a loop (dropped at once), RSS sampled every 0.1 s from /proc/PID/status. Three allocators: glibc with " \
                  "its default arena count (MALLOC_ARENA_MAX unset: up to 8 × cores = 16 arenas here), MALLOC_ARENA_MAX=2 " \
                  "(Spindle's default) and jemalloc (Debian's libjemalloc.so.2 via LD_PRELOAD; Spindle's `--allocator jemalloc`). " \
                  "Two ways: the plain seed script, and the same loop as a Spindle app (threads engine, 20 threads, " \
                  "`wrk -c 20`, 10 arrays per request)."
    GOAL = "RSS over time with glibc defaults, Spindle's arena default, and jemalloc — charted (the seed: > 1 GB with " \
           "the default vs 600–700 MB with MALLOC_ARENA_MAX set; jemalloc lower still)."

    # ---- report ---------------------------------------------------------

    def self.ok(record, kind) = record[:runs].select { |r| r[:kind] == kind && !r[:failed] }

    def self.median_of(runs, key) = Stats.median(runs.map { |r| r.dig(:result, key) }.compact)

    def self.headline(record)
      parts = %w[script spindle].map do |kind|
        peaks = CONFIGS.map { |c| median_of(ok(record, kind).select { |r| r[:config] == c }, :peak_rss) }
        "#{kind}: #{peaks.map { |p| p ? "#{(p / 1048576.0).round} MB" : '–' }.join(' / ')}"
      end
      "peak RSS, glibc default / ARENA_MAX=2 / jemalloc — #{parts.join('; ')}"
    end

    def self.render(record, json_name) = [markdown(record, json_name), chart(record)]

    def self.mbs(bytes) = bytes ? F.integer((bytes / 1048576.0).round) : "–"

    def self.table(record, kind)
      base = nil
      rows = CONFIGS.map do |config|
        runs = ok(record, kind).select { |r| r[:config] == config }
        peak = median_of(runs, :peak_rss)
        base ||= peak
        extra = if kind == "spindle"
                  checked = runs.first&.dig(:checked) || {}
                  ["#{F.rps(median_of(runs, :requests_per_sec))} req/s, #{F.integer(median_of(runs, :requests).to_i)} requests",
                   "MALLOC_ARENA_MAX=#{checked[:malloc_arena_max] || 'unset'}, #{checked[:allocator_mapped]} mapped"]
                else
                  [format("%.1f s", median_of(runs, :seconds).to_f), "#{median_of(runs, :gc_count)&.round} GCs"]
                end
        [config, mbs(peak), mbs(median_of(runs, :final_rss)), peak && base ? format("%.2f×", peak.to_f / base) : "–",
         runs.map { |r| mbs(r.dig(:result, :peak_rss)) }.join(", "), *extra]
      end
      header = ["allocator", "peak RSS (MB, median)", "RSS at the end (MB)", "peak ÷ glibc default", "peak per round (MB)"]
      header += kind == "spindle" ? ["load", "checked in the process"] : ["time", "GC runs"]
      F.table(header, rows)
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      commands = record[:runs].reject { |r| r[:failed] }.uniq { |r| [r[:kind], r[:config]] }.map { |r| "# #{r[:kind]}, #{r[:config]}\n#{r[:command]}" }
      failed = record[:runs].select { |r| r[:failed] }.map { |r| "- #{r[:kind]} #{r[:config]} round #{r[:round]}: #{r[:failed]}" }
      <<~MD
        # #{record[:scenario][:title]} — `bench/run arenas`

        > Generated by `bench/run arenas` from [data/#{json_name}](data/#{json_name}); do not edit by hand
        > (`bench/run arenas --render` redraws from the newest data).#{"\n>\n> **Quick run** (`--quick`): a smoke test, not a result." if s[:quick]}

        #{record[:scenario][:description]}

        **What must be shown** (issue 4): #{record[:scenario][:goal]}

        ![arenas chart](arenas.svg)

        ## Run

        #{F.table(%w[what value], [
          ['Date', "#{record[:started_at]} to #{record[:finished_at]}"],
          ['Machine', "#{m[:nproc]} cores (#{m[:cpu]}), #{m[:memory_gib]} GiB, #{m[:kernel]}, #{m[:os]}"],
          ['Ruby', "#{m[:ruby]}; YJIT off"],
          ['glibc / jemalloc', "glibc #{s[:glibc]}; #{s[:jemalloc]} (libjemalloc2 #{s[:jemalloc_package]}), default settings"],
          ['Plain script', "20 threads × #{s[:script_iterations_per_thread]} loops each (≈ #{F.integer(20 * s[:script_iterations_per_thread])} MB allocated in all), then exit"],
          ['Spindle app', "`bin/spindle --engine threads -t 20:20`, one process; `wrk -t 1 -c 20 -d #{s[:spindle_duration_s]}s` (bounded by time: the request count is in the table), #{s[:per_request_arrays]} arrays per request"],
          ['Rounds', "#{s[:rounds]}; the three allocators interleave within each round; figures are medians over rounds"],
          ['Spindle source', "lib/ext/bin digest #{record.dig(:spindle_source, :at_start)}#{record.dig(:spindle_source, :changed) ? ' (**changed during the run**)' : ', unchanged during the run'}"]
        ])}

        ## The plain seed script

        #{table(record, 'script')}

        ## As a Spindle app (threads engine, 20 threads)

        #{table(record, 'spindle')}

        - "glibc default" for Spindle means its allocator setup left alone (`SPINDLE_MEMORY_SET=1` in the environment, so
          bin/spindle does not re-exec with MALLOC_ARENA_MAX=2): `--malloc-arenas` takes only a positive count, so there is
          no flag for "glibc's own default". What the process really ran with is in the last column, read from
          /proc/PID/environ and /proc/PID/maps.
        - RSS includes memory the allocator keeps for reuse. jemalloc returns unused dirty pages to the OS only after its
          decay time (10 s by default), glibc only from the top of each arena or by `malloc_trim`.
        #{"\n## Failed\n\n#{failed.join("\n")}\n" unless failed.empty?}
        ## Commands

        ```sh
        #{commands.join("\n")}
        ```
      MD
    end

    def self.chart(record)
      s = record[:settings]
      chart = SvgChart::Lines.new(title: "RSS over time, 20 allocating threads (bench/run arenas)",
                               subtitle: "#{record[:started_at][0, 10]} · #{record[:machine][:nproc]} cores · #{record[:machine][:ruby][/ruby \S+/]} · " \
                                         "round 1 of #{s[:rounds]}#{' · QUICK' if s[:quick]}",
                               y_label: "RSS (MB)", x_label: "seconds since start")
      [["script", "plain seed script: 20 threads × #{s[:script_iterations_per_thread]} loops"],
       ["spindle", "Spindle app, threads engine -t 20:20, wrk -c 20 for #{s[:spindle_duration_s]} s"]].each do |kind, title|
        runs = ok(record, kind).select { |r| r[:round] == 1 }
        next if runs.empty?

        chart.panel(title, series: runs.map { |r|
          { name: r[:config], color: COLORS[r[:config]], points: r[:samples].map { |t, rss| [t, (rss / 1048576.0).round(1)] } }
        })
      end
      chart.render
    end
  end
end

Bench::Scenario.define(
  name: "arenas",
  title: Bench::Arenas::TITLE,
  description: Bench::Arenas::DESCRIPTION,
  goal: Bench::Arenas::GOAL,
  app: "arenas.ru",
  path: "/",
  processes: [1],
  connections: [20],
  custom: Bench::Arenas,
  report: Bench::Arenas,
  quick: {} # one process, one server: the trial's own quick sizes (30 loops, 2 s of wrk, 1 round)
)
