# frozen_string_literal: true

require_relative "server_process"
require_relative "wrk_trial"
require_relative "log"

module Bench
  # One round for one server at one process count: start it on a fresh port,
  # wait until it answers, warm it up, measure every connection count, stop
  # it. Returns the records, or raises ServerProcess::StartFailed. Connection
  # counts left when settings.deadline passes are recorded as skipped.
  class ServerRun
    attr_reader :command_line, :configs

    def initialize(spec:, scenario:, settings:, processes:, round:)
      @spec = spec
      @scenario = scenario
      @settings = settings
      @processes = processes
      @round = round
    end

    def call
      start
      measure
    ensure
      stop
    end

    # Started and warmed up, ready for #measure (Runner's --alternate keeps
    # it running across rounds).
    def start
      @server = ServerProcess.for(spec: @spec, scenario: @scenario, processes: @processes,
                                  threads: @scenario.threads&.dig(@spec.name) || @settings.threads)
      @command_line = @server.command_line
      @configs = @server.launch.written
      @server.start
      @trial = (@scenario.trial || WrkTrial).new(server: @server, settings: @settings, scenario: @scenario)
      warm_up(@server, @trial, connections)
      self
    end

    # One record per connection count, as round (from 0).
    def measure(round = @round)
      @round = round
      connections.map { |c| measure_one(@server, @trial, c) }
    end

    def stop = @server&.stop

    private

    def connections = @settings.connections || @scenario.connections

    # A failed warm-up is logged; the measurements that follow then fail on
    # their own if the server is gone, or run if it merely stumbled.
    def warm_up(server, trial, connections)
      trial.warm_up(connections)
    rescue Wrk::Failed => e
      Log.warn("#{@spec.name} p=#{@processes} round #{@round + 1}: warm-up failed: #{e.message}" \
               "#{" (server exited: #{server.death})" unless server.alive?}")
    end

    # A figure counts only if the server was still running when wrk finished;
    # once it has died, the remaining connection counts fail without a run.
    def measure_one(server, trial, connections)
      base = { server: @spec.name, processes: @processes, round: @round + 1, connections: connections }
      return failure(base, @settings.deadline.reason) if @settings.deadline&.passed?
      return failure(base, "server had exited: #{server.death}") unless server.alive?

      record = trial.measure(connections)
      return failure(base, "server exited during the run: #{server.death}") unless server.alive?

      progress(record)
      base.merge(record)
    rescue Wrk::Failed => e
      failure(base, e.message)
    end

    def failure(base, reason)
      Log.warn("#{@spec.name} p=#{@processes} c=#{base[:connections]} round #{@round + 1}: #{reason}")
      base.merge(failed: reason)
    end

    def progress(record)
      cpu = record[:cpu] || {}
      flag = record[:load_generator_bound] ? "  LOAD-GENERATOR BOUND" : ""
      Log.info(format("%-9s round %d  %-28s p=%d c=%-4d %9.0f req/s  p99 %7.2f ms  errors %d/%d  " \
                      "cpu wrk %.2f server %.2f db %.2f other %.2f%s",
                      @scenario.name, @round + 1, @spec.name, @processes, record[:connections],
                      record[:requests_per_sec], record[:latency_ms][:p99], record[:errors].values.sum,
                      record[:bad_status], cpu[:wrk_cores].to_f, cpu[:server_cores].to_f, cpu[:database_cores].to_f,
                      cpu[:other_cores].to_f, flag))
    end
  end
end
