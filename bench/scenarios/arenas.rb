# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"

module Bench
  # Issue 4, "What must be shown" #3: the seed's arena test (shared seed 003),
  # as the plain script and as a Spindle app (the description: below says
  # how). Configurations interleave within each round; nothing runs at the
  # same time as anything else.
  class Arenas < CustomScenario
    SAMPLE_EVERY = 0.1
    # name => [chart colour, the script's environment, bin/spindle's flags].
    # Spindle's glibc default is left alone by SPINDLE_MEMORY_SET (see NOTES).
    SETUPS = {
      "glibc default (MALLOC_ARENA_MAX unset)" => ["#d62728", -> { {} }, nil],
      "glibc, MALLOC_ARENA_MAX=2 (--allocator glibc)" => ["#3182bd", -> { { "MALLOC_ARENA_MAX" => "2" } }, %w[--allocator glibc]],
      "jemalloc default (narenas 4 × cores)" => ["#ff7f0e", -> { { "LD_PRELOAD" => Jemalloc.path } },
                                                 %w[--allocator jemalloc --malloc-arenas 0]],
      "jemalloc, narenas:2 (Spindle's default when installed)" => ["#2ca02c", -> { Jemalloc.settings }, []]
    }.freeze
    CONFIGS = SETUPS.keys.freeze
    KINDS = %w[script spindle].freeze

    def initialize(scenario, settings)
      super
      @iterations = settings.quick ? 30 : 500
      @duration = settings.quick ? 2 : 25
      @rounds = settings.quick ? 1 : [settings.rounds, 2].min
    end

    private

    def trials
      runs = (1..@rounds).to_a.product(KINDS, CONFIGS).map do |round, kind, config|
        trial("#{kind} #{config}", { kind: kind, config: config, round: round, samples: [] }) { send(kind, config) }
          .tap { |r| log(r) unless r[:samples].empty? }
      end
      { runs: runs }
    end

    def settings_record
      { threads: 20, script_iterations_per_thread: @iterations, spindle_duration_s: @duration,
        spindle_connections: 20, per_request_arrays: 10, sample_every_s: SAMPLE_EVERY, rounds: @rounds,
        jemalloc: Jemalloc.path, jemalloc_package: Versions.command(%w[dpkg-query -W libjemalloc2], /libjemalloc2\s+(\S+)/),
        glibc: Versions.command(%w[ldd --version], /(\d+\.\d+)/), processes: [1] }
    end

    # The plain seed script under each allocator (BASE_ENV clears the rest).
    def script(config)
      env = ServerProcess::BASE_ENV.merge(SETUPS[config][1].call, "ARENAS_ITERATIONS" => @iterations.to_s, "ARENAS_THREADS" => "20")
      out = File.join(Paths::TMP, "arenas-script.out")
      t0 = Child.now
      pid = Process.spawn(env, RbConfig.ruby, File.join(Paths::APPS, "arenas_seed.rb"), out: out, err: out, in: File::NULL, pgroup: true)
      samples = []
      Child.wait(pid, 300, every: SAMPLE_EVERY) { (rss = Memory.rss(pid))&.positive? && samples << [(Child.now - t0).round(2), rss] }
      result = File.read(out)[/^ARENAS_RESULT (\{.*\})$/, 1]
      shown = env.slice("MALLOC_ARENA_MAX", "LD_PRELOAD", "MALLOC_CONF", "ARENAS_ITERATIONS", "ARENAS_THREADS").compact.map { |k, v| "#{k}=#{v}" }
      { command: "#{shown.join(' ')} ruby bench/apps/arenas_seed.rb", samples: samples,
        result: result && JSON.parse(result, symbolize_names: true), failed: (result ? nil : "no result: #{File.read(out)[-300..]}") }
    end

    # The same loop as a Spindle app, loaded by wrk, RSS sampled meanwhile.
    def spindle(config)
      flags = SETUPS[config][2]
      leave_alone = flags ? {} : { "SPINDLE_MEMORY_SET" => "1" } # then bin/spindle keeps glibc's default
      target = Scenario.new(name: "arenas", app: "arenas.ru", path: "/", expect_body: "allocated",
                            env: -> { { "MALLOC_ARENA_MAX" => nil, "LD_PRELOAD" => nil, "MALLOC_CONF" => nil }.merge(leave_alone) })
      server = Memory.start(name: "arenas-spindle", runtime: :spindle, target: target, threads: 20) do |l|
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", "20:20", *flags, "-b", "tcp://#{l.address}", "-q", l.rackup]
      end
      environ = Memory.environ(server.pid)
      checked = { malloc_arena_max: environ["MALLOC_ARENA_MAX"], malloc_conf: environ["MALLOC_CONF"], ld_preload: environ["LD_PRELOAD"],
                  allocator_mapped: Memory.allocator(server.pid), threads_in_process: Dir["/proc/#{server.pid}/task/*"].size }
      t0 = Child.now
      samples = []
      sampler = Thread.new do
        while (rss = Memory.rss(server.pid))
          samples << [(Child.now - t0).round(2), rss]
          sleep SAMPLE_EVERY
        end
      end
      wrk = Memory.wrk_run(server.launch.url("/"), connections: 20, duration: @duration, timeout: 30)
      sleep 1 # one more second of samples after the load: what stays resident
      { command: server.command_line, checked: checked, samples: samples, wrk: wrk,
        result: { peak_rss: samples.map(&:last).max, final_rss: samples.last&.last, requests: wrk[:requests],
                  requests_per_sec: wrk[:requests_per_sec] } }
    ensure
      sampler&.kill
      server&.stop
    end

    def log(r)
      res = r[:result] || {}
      Log.info(format("arenas %-7s round %d %-42s peak %6.0f MB  final %6.0f MB%s", r[:kind], r[:round], r[:config],
                      Memory.mb(res[:peak_rss].to_i), Memory.mb(res[:final_rss].to_i),
                      r[:checked] ? "  (#{r[:checked].map { |k, v| "#{k}=#{v.inspect}" }.join(' ')})" : ""))
    end

    # ---- report ---------------------------------------------------------

    def self.ok_runs(record, kind) = ok(record).select { |r| r[:kind] == kind }
    def self.median_of(runs, key) = Stats.median(runs.map { |r| r.dig(:result, key) })
    def self.mbs(bytes) = F.mib(bytes, whole: true)

    def self.headline(record)
      parts = KINDS.map do |kind|
        peaks = CONFIGS.map { |c| median_of(ok_runs(record, kind).select { |r| r[:config] == c }, :peak_rss) }
        "#{kind}: #{peaks.map { |p| p ? "#{(p / 1048576.0).round} MB" : '–' }.join(' / ')}"
      end
      "peak RSS, glibc default / ARENA_MAX=2 / jemalloc default / jemalloc narenas:2 — #{parts.join('; ')}"
    end

    def self.table(record, kind)
      base = nil
      rows = CONFIGS.map do |config|
        runs = ok_runs(record, kind).select { |r| r[:config] == config }
        peak = median_of(runs, :peak_rss)
        base ||= peak
        [config, mbs(peak), mbs(median_of(runs, :final_rss)), peak && base ? format("%.2f×", peak.to_f / base) : "–",
         runs.map { |r| mbs(r.dig(:result, :peak_rss)) }.join(", "), *extra(kind, runs)]
      end
      header = ["allocator", "peak RSS (MB, median)", "RSS at the end (MB)", "peak ÷ glibc default", "peak per round (MB)"]
      F.table(header + (kind == "spindle" ? ["load", "checked in the process"] : ["time", "GC runs"]), rows)
    end

    def self.extra(kind, runs)
      return [format("%.1f s", median_of(runs, :seconds).to_f), "#{median_of(runs, :gc_count)&.round} GCs"] unless kind == "spindle"

      checked = runs.first&.dig(:checked) || {}
      ["#{F.rps(median_of(runs, :requests_per_sec))} req/s, #{F.integer(median_of(runs, :requests).to_i)} requests",
       "MALLOC_ARENA_MAX=#{checked[:malloc_arena_max] || 'unset'}, MALLOC_CONF=#{checked[:malloc_conf] || 'unset'}, " \
       "#{checked[:allocator_mapped]} mapped"]
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      commands = ok(record).uniq { |r| [r[:kind], r[:config]] }.map { |r| "# #{r[:kind]}, #{r[:config]}\n#{r[:command]}" }
      P.page(P.title(record, json_name, goal_from: "issue 4"),
             P.run_table(record, [
               ["glibc / jemalloc", "glibc #{s[:glibc]}; #{s[:jemalloc]} (libjemalloc2 #{s[:jemalloc_package]})"],
               ["Plain script", "20 threads × #{s[:script_iterations_per_thread]} loops each (≈ #{F.integer(20 * s[:script_iterations_per_thread])} MB allocated in all), then exit"],
               ["Spindle app", "`bin/spindle --engine threads -t 20:20`, one process; `wrk -t 1 -c 20 -d #{s[:spindle_duration_s]}s` (bounded by time: the request count is in the table), #{s[:per_request_arrays]} arrays per request"],
               ["Rounds", "#{s[:rounds]}; the four setups interleave within each round; figures are medians over rounds"]
             ]),
             "## The plain seed script\n\n#{table(record, 'script')}",
             "## As a Spindle app (threads engine, 20 threads)\n\n#{table(record, 'spindle')}\n\n#{NOTES}",
             P.listing("Failed", P.failed(record[:runs]) { |r| "#{r[:kind]} #{r[:config]} round #{r[:round]}" }),
             "## Commands\n\n#{P.sh(commands)}")
    end

    def self.chart(record)
      s = record[:settings]
      chart = P.chart(record, "RSS over time, 20 allocating threads",
                      "#{record[:machine][:nproc]} cores · #{record[:machine][:ruby][/ruby \S+/]} · round 1 of #{s[:rounds]}",
                      kind: SvgChart::Lines, y_label: "RSS (MB)", x_label: "seconds since start")
      { "script" => "plain seed script: 20 threads × #{s[:script_iterations_per_thread]} loops",
        "spindle" => "Spindle app, threads engine -t 20:20, wrk -c 20 for #{s[:spindle_duration_s]} s" }.each do |kind, title|
        runs = ok_runs(record, kind).select { |r| r[:round] == 1 }
        next if runs.empty?

        chart.panel(title, series: runs.map { |r|
          { name: r[:config], color: SETUPS.dig(r[:config], 0) || "#999999", points: r[:samples].map { |t, rss| [t, (rss / 1048576.0).round(1)] } }
        })
      end
      chart.render
    end

    NOTES = <<~MD.chomp
      - "glibc default" for Spindle means its allocator setup left alone (`SPINDLE_MEMORY_SET=1` in the environment, so
        bin/spindle does not re-exec with its allocator settings). What the process really ran with is in the last
        column, read from /proc/PID/environ and /proc/PID/maps.
      - RSS includes memory the allocator keeps for reuse. jemalloc returns unused dirty pages to the OS only after its
        decay time (10 s by default), glibc only from the top of each arena or by `malloc_trim`.
    MD
  end
end

Bench::Scenario.define(
  name: "arenas",
  title: "glibc arenas: RSS over time, 20 allocating threads",
  description: "The seed's arena test: 20 threads, each allocating a 1,000-element array of 1,000-character strings " \
               "in a loop (dropped at once), RSS sampled every 0.1 s from /proc/PID/status. Four allocator setups: glibc with " \
               "its default arena count (MALLOC_ARENA_MAX unset: up to 8 × cores = 16 arenas here), glibc with " \
               "MALLOC_ARENA_MAX=2 (Spindle's default without jemalloc), jemalloc (Debian's libjemalloc.so.2 via LD_PRELOAD) " \
               "with its default arena count, and jemalloc with MALLOC_CONF=narenas:2 (Spindle's default when installed). " \
               "Two ways: the plain seed script, and the same loop as a Spindle app (threads engine, 20 threads, " \
               "`wrk -c 20`, 10 arrays per request).",
  goal: "RSS over time with glibc defaults, Spindle's arena default, and jemalloc — charted (the seed: > 1 GB with " \
        "the default vs 600–700 MB with MALLOC_ARENA_MAX set; jemalloc lower still).",
  app: "arenas.ru",
  path: "/",
  processes: [1],
  connections: [20],
  custom: Bench::Arenas,
  quick: {} # one process, one server: the trial's own quick sizes (30 loops, 2 s of wrk, 1 round)
)
