# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# --alternate: each server started once per process count, measured in every
# round in the rotated order, stopped once at the end; one that fails to
# start is stopped, reported unavailable, and the others go on. No server is
# started here: the runner's ServerRun is a stand-in that logs what it is asked.
class AlternateTest < Minitest::Test
  class LoggedRun
    def initialize(name, log, fail_start)
      @name = name
      @log = log
      @fail_start = fail_start
    end

    def start
      @log << [:start, @name]
      raise Bench::ServerProcess::StartFailed, "#{@name} did not answer" if @fail_start

      self
    end

    def measure(round)
      @log << [:measure, @name, round]
      [{ server: @name, round: round + 1 }]
    end

    def stop = @log << [:stop, @name]
    def command_line = "#{@name} command"
    def configs = {}
  end

  class LoggedRunner < Bench::Runner
    attr_reader :log

    def initialize(scenario, settings, failing: nil)
      super(scenario, settings)
      @log = []
      @failing = failing
    end

    def run_processes(procs) = run_alternating(procs)
    def measurements = @measurements
    def unavailable_servers = @unavailable

    private

    def server_run(spec, _procs, _round) = LoggedRun.new(spec.name, @log, spec.name == @failing)
  end

  SERVERS = %w[spindle-blocking spindle-fibers puma].freeze

  def runner(failing: nil)
    scenario = Bench::Scenario.new(name: "alt", title: "alt", app: "hello.ru", connections: [16], processes: [1])
    settings = Bench::Options.parse(%W[alt --alternate --rounds 3 --servers #{SERVERS.join(',')}])
    LoggedRunner.new(scenario, settings, failing: failing)
  end

  def quietly(&block) = capture_io(&block)

  def test_each_server_starts_once_is_measured_every_round_in_turn_and_stops_once
    r = runner
    quietly { r.run_processes(1) }
    starts = r.log.select { _1[0] == :start }.map(&:last)
    measures = r.log.select { _1[0] == :measure }.map { _1[1..] }
    assert_equal SERVERS, starts
    assert_equal (0..2).flat_map { |round| SERVERS.rotate(round).map { [_1, round] } }, measures
    assert_equal SERVERS, r.log.select { _1[0] == :stop }.map(&:last)
    assert_equal :stop, r.log.last[0]
    assert_equal 9, r.measurements.size
  end

  def test_a_server_that_fails_to_start_is_stopped_and_the_others_go_on
    r = runner(failing: "spindle-fibers")
    quietly { r.run_processes(1) }
    assert_equal({ ["spindle-fibers", 1] => "spindle-fibers did not answer" }, r.unavailable_servers)
    assert_equal %w[spindle-fibers spindle-blocking puma], r.log.select { _1[0] == :stop }.map(&:last)
    assert_equal %w[spindle-blocking puma], r.log.select { _1[0] == :measure }.map { _1[1] }.uniq
    assert_equal 6, r.measurements.size
  end

  def test_the_record_says_the_rounds_alternated
    assert_match(/kept running/, Bench::Report::Parts.interleaving(round_order: "alternating"))
  end
end
