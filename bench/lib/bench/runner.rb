# frozen_string_literal: true

require "etc"
require_relative "registry"
require_relative "server_run"
require_relative "run_record"
require_relative "bottleneck"
require_relative "log"
require_relative "quick_shape"

module Bench
  # Runs one scenario: for each process count, `rounds` rounds, and in each
  # round every server once, so slow drift on this shared machine touches
  # every server alike. Each round starts one server further down the
  # registry order (A B C, B C A, C A B): with one order for every round,
  # whichever ran first paid for it (bench/README.md). Returns the run's
  # record (what the JSON file holds). Once settings.deadline (the
  # run's --deadline, or the scenario's --quick budget) has passed, no new
  # server is started: the rest are reported "skipped: ...".
  #
  # With --alternate, every server of a process count is started and warmed
  # once, then all are measured in turn in each round, in the same rotated
  # order, without a restart: a round costs its measurements only, so a run
  # of the same length has more rounds (bench/README.md).
  class Runner
    def initialize(scenario, settings)
      @scenario = scenario
      settings = settings.with(warmup: scenario.warmup) if scenario.warmup && !settings.quick && !settings.given?(:warmup)
      @settings = settings.deadline ? settings : settings.with(deadline: QuickShape.run_deadline(settings))
      @specs = SERVERS.select_names(settings.servers || scenario.servers).select { |s| scenario.supports?(s) }
      @unavailable = {}  # [name, processes] => reason
      @commands = {}     # "name p=N" => command line
      @configs = {}      # "name p=N" => { path => content } of files the command reads
      @measurements = []
    end

    def run
      RunRecord.around(@scenario, load_generator) do
        servers = describe_servers
        @scenario.prepare&.call(@settings, @scenario) # before any server of the run is started
        processes.each do |procs|
          next run_alternating(procs) if @settings.alternate

          @settings.rounds.times { |round| run_round(procs, round) }
        end
        { settings: settings_record, servers: servers, commands: @commands, configs: @configs,
          unavailable: @unavailable.map { |(name, procs), reason| { server: name, processes: procs, reason: reason } },
          measurements: @measurements }
      end
    end

    # The servers of round (from 0), in the order they run.
    def self.order(specs, round) = specs.rotate(round)

    private

    def processes = @settings.processes || @scenario.processes

    def run_round(procs, round)
      Log.info("#{@scenario.name}: #{procs} process(es), round #{round + 1} of #{@settings.rounds}")
      self.class.order(@specs, round).each do |spec|
        key = [spec.name, procs]
        next if @unavailable.key?(key)

        reason = skip_reason(spec)
        next mark_unavailable(key, reason) if reason

        run_server(spec, procs, round, key)
      end
    end

    def run_alternating(procs)
      runs = []
      Log.info("#{@scenario.name}: #{procs} process(es), every server started once, #{@settings.rounds} rounds")
      @specs.each { |spec| (run = start_kept(spec, procs)) && runs << run }
      @settings.rounds.times do |round|
        Log.info("#{@scenario.name}: #{procs} process(es), round #{round + 1} of #{@settings.rounds}")
        self.class.order(runs, round).each { |run| @measurements.concat(run.measure(round)) }
      end
    ensure
      runs.each(&:stop)
    end

    # A started, warmed ServerRun, or nil when the server is unavailable.
    # A start that fails, however, stops what it started.
    def start_kept(spec, procs)
      key = [spec.name, procs]
      reason = skip_reason(spec)
      return unavailable(key, reason) if reason

      run = server_run(spec, procs, 0)
      started = run.start
    rescue ServerProcess::StartFailed => e
      unavailable(key, e.message)
    ensure
      run.stop if run && !started
      note_command(run, key) if run
    end

    # Why spec is not started: unavailable here, or the run's deadline passed.
    def skip_reason(spec) = spec.unavailable || (@settings.deadline.passed? && @settings.deadline.reason)

    def unavailable(key, reason)
      mark_unavailable(key, reason)
      nil
    end

    def run_server(spec, procs, round, key)
      run = server_run(spec, procs, round)
      @measurements.concat(run.call)
    rescue ServerProcess::StartFailed => e
      mark_unavailable(key, e.message)
    ensure
      note_command(run, key)
    end

    def note_command(run, (name, procs))
      label = "#{name} p=#{procs}"
      @commands[label] ||= run.command_line if run&.command_line
      @configs[label] ||= run.configs if run&.configs&.any?
    end

    def server_run(spec, procs, round)
      ServerRun.new(spec: spec, scenario: @scenario, settings: @settings, processes: procs, round: round)
    end

    def mark_unavailable(key, reason)
      Log.warn("#{key.first} p=#{key.last}: unavailable: #{reason}")
      @unavailable[key] = reason
    end

    def describe_servers
      Versions.using(@scenario.bundle) { @specs.map { |spec| describe(spec) } }
    end

    def describe(spec)
      version = spec.unavailable ? "unavailable" : Versions.safely(spec.version)
      { name: spec.name, family: spec.family, model: spec.model, threaded: spec.threaded,
        version: version, notes: spec.notes }
    end

    def load_generator
      Versions.load_generator(@settings.wrk_threads)
              .merge(note: "on the same #{Etc.nprocessors}-core machine as the server: the two compete for the same cores")
    end

    def settings_record
      s = @settings
      { quick: s.quick, rounds: s.rounds, duration_s: s.duration, warmup_s: s.warmup,
        warm_pools: @scenario.warm_pools || false, connections: s.connections || @scenario.connections, processes: processes,
        threads_per_process: s.threads, wrk_threads: s.wrk_threads, wrk_timeout_s: s.wrk_timeout,
        keep_alive: true, rack_env: "production", round_order: s.alternate ? "alternating" : "rotated",
        bottleneck_rule: { wrk_busy: Bottleneck::WRK_BUSY, server_busy: Bottleneck::SERVER_BUSY } }
    end
  end
end
