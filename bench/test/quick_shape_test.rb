# frozen_string_literal: true

require "minitest/autorun"
require_relative "support/fake_clock"
require_relative "../lib/bench"

class QuickShapeTest < Minitest::Test

  SHAPE = { servers: %w[spindle-threads puma], connections: [64], processes: [1], rounds: 1, budget_s: 30 }.freeze

  def setup
    @clock = FakeClock.new(1000.0)
  end

  def scenario(quick: SHAPE)
    Bench::Scenario.new(name: "test", title: "test", app: "hello.ru", connections: [16, 64, 256], processes: [1, 2],
                        quick: quick)
  end

  def settings(*argv) = Bench::Options.parse(["hello", *argv])

  def shaped(argv, quick: SHAPE)
    s = settings(*argv)
    Bench::QuickShape.settings_for(scenario(quick: quick), s, Bench::QuickShape.run_deadline(s, clock: @clock), clock: @clock)
  end

  def test_the_shape_applies_under_quick
    s = shaped(%w[--quick])
    assert_equal [%w[spindle-threads puma], [64], [1], 1], [s.servers, s.connections, s.processes, s.rounds]
  end

  def test_a_flag_the_user_passed_wins_over_the_shape
    s = shaped(%w[--quick --servers nginx --connections 16,256 --processes 2 --rounds 3])
    assert_equal [["nginx"], [16, 256], [2], 3], [s.servers, s.connections, s.processes, s.rounds]
  end

  def test_only_the_flags_passed_win
    s = shaped(%w[--quick --connections 16])
    assert_equal [%w[spindle-threads puma], [16], [1]], [s.servers, s.connections, s.processes]
  end

  def test_without_quick_the_shape_is_ignored
    s = shaped([])
    assert_equal [nil, nil, nil, Bench::Options::FULL[:rounds]], [s.servers, s.connections, s.processes, s.rounds]
  end

  def test_a_scenario_without_a_shape_keeps_its_own
    s = shaped(%w[--quick], quick: {})
    assert_equal [nil, nil, Bench::Options::QUICK[:rounds]], [s.servers, s.connections, s.rounds]
  end

  def test_the_budget_is_the_scenario_s_own_from_when_it_starts
    deadline = shaped(%w[--quick]).deadline
    @clock.now += 29
    refute deadline.passed?
    @clock.now += 2
    assert deadline.passed?
    assert_equal "skipped: the test scenario's --quick budget (30 s) passed", deadline.reason
  end

  def test_the_default_budget
    assert_in_delta Bench::QuickShape::BUDGET_S, shaped(%w[--quick], quick: {}).deadline.left
  end

  def test_the_run_deadline_comes_first_when_it_is_earlier
    s = settings("--quick")
    run = Bench::QuickShape.run_deadline(s, clock: @clock)
    @clock.now += Bench::QuickShape::RUN_BUDGET_S - 10
    own = Bench::QuickShape.settings_for(scenario, s, run, clock: @clock).deadline
    assert_same run, own
    assert_in_delta 10, own.left
  end

  def test_a_full_run_has_only_the_run_s_deadline
    s = settings("--deadline", "2")
    run = Bench::QuickShape.run_deadline(s, clock: @clock)
    assert_in_delta 120, run.left
    assert_same run, Bench::QuickShape.settings_for(scenario, s, run, clock: @clock).deadline
  end

  def test_quick_with_deadline_uses_it_for_the_run
    s = settings("--quick", "--deadline", "1")
    assert_in_delta 60, Bench::QuickShape.run_deadline(s, clock: @clock).left
  end

  def test_unknown_keys_are_refused
    assert_raises(ArgumentError) { scenario(quick: { server: %w[puma] }) }
  end

  def test_given_lists_only_what_was_passed
    assert_equal %i[quick connections], settings("--quick", "--connections", "16").given
  end
end
