# frozen_string_literal: true

require "minitest/autorun"
require_relative "support/fake_clock"
require_relative "../lib/bench"

# A --quick budget (or --deadline) that passes turns the trials not yet
# started into "skipped: ..." entries: servers not started in the runner,
# connection counts not measured in a server run. No server is started here:
# the runner's server start and the trial are stand-ins.
class BudgetTest < Minitest::Test

  # Every server "runs" for 20 s of the fake clock and measures nothing.
  class TimedRunner < Bench::Runner
    attr_reader :started

    def initialize(scenario, settings, clock)
      super(scenario, settings)
      @clock = clock
      @started = []
    end

    def round(procs) = run_round(procs, 0)
    def skipped = @unavailable.select { |_, reason| reason.start_with?("skipped") }.keys.map(&:first)

    private

    def run_server(spec, _procs, _round, _key)
      @started << spec.name
      @clock.now += 20
    end
  end

  # A trial whose every measurement takes 20 s of the fake clock.
  class SlowTrial
    def initialize(clock) = @clock = clock
    def warm_up(_connections) = nil

    def measure(connections)
      @clock.now += 20
      { connections: connections, requests_per_sec: 1.0, latency_ms: { p99: 1.0 }, errors: {}, bad_status: 0 }
    end
  end

  # What ServerRun#measure_one needs of a started server.
  FakeServer = Struct.new(:death) do
    def alive? = true
  end

  def setup
    @clock = FakeClock.new
    @scenario = Bench::Scenario.new(name: "budget", title: "budget", app: "hello.ru", connections: [16, 64, 256],
                                    processes: [1], quick: { budget_s: 45 })
  end

  def settings
    s = Bench::Options.parse(%w[budget --quick --servers spindle-threads,spindle-fibers,puma,falcon])
    Bench::QuickShape.settings_for(@scenario, s, Bench::QuickShape.run_deadline(s, clock: @clock), clock: @clock)
  end

  def quietly(&block) = capture_io(&block)

  def test_servers_past_the_budget_are_skipped
    runner = TimedRunner.new(@scenario, settings, @clock)
    quietly { runner.round(1) }
    # 0 s, 20 s, 40 s: started; at 60 s the 45 s budget has passed.
    assert_equal %w[spindle-threads spindle-fibers puma], runner.started
    assert_equal %w[falcon], runner.skipped
  end

  def test_a_later_round_starts_nothing_once_the_budget_has_passed
    runner = TimedRunner.new(@scenario, settings, @clock)
    quietly { runner.round(1) }
    quietly { runner.send(:run_round, 1, 1) }
    assert_equal 3, runner.started.size
  end

  def test_connection_counts_past_the_budget_are_recorded_as_skipped
    s = settings
    run = Bench::ServerRun.new(spec: Bench::SERVERS.fetch("puma"), scenario: @scenario, settings: s, processes: 1, round: 0)
    trial = SlowTrial.new(@clock)
    @clock.now += 30 # the server's start took 30 s of the budget
    records = nil
    quietly { records = [16, 64, 256].map { |c| run.send(:measure_one, FakeServer.new, trial, c) } }
    skipped = "skipped: the budget scenario's --quick budget (45 s) passed"
    assert_equal [nil, skipped, skipped], records.map { |r| r[:failed] }
  end

  def test_a_custom_scenario_s_loop_gets_skipped_records_once_the_budget_has_passed
    s = settings
    assert_nil Bench::Deadline.skipped(s, "leak hello", { mode: "hello" })
    @clock.now += 46
    record = nil
    quietly { record = Bench::Deadline.skipped(s, "leak extend", { mode: "extend" }) }
    assert_equal({ mode: "extend", failed: "skipped: the budget scenario's --quick budget (45 s) passed" }, record)
  end
end
