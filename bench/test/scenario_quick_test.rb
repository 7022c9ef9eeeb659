# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# The quick: shapes of the real scenarios (bench/scenarios/*.rb): each still
# runs the scenario end to end, on servers that exist, with at least one
# Spindle engine and, where the scenario has peers, one peer.
class ScenarioQuickTest < Minitest::Test
  SCENARIOS = Bench::Scenario.load_all

  def grid = SCENARIOS.values.reject(&:custom)

  def test_every_grid_scenario_has_a_quick_shape
    missing = grid.select { |s| s.quick.empty? }.map(&:name)
    assert_empty missing
  end

  def test_quick_servers_exist_and_keep_spindle_and_a_peer
    grid.each do |s|
      full = Bench::SERVERS.select_names(s.servers).select { |spec| s.supports?(spec) }
      quick = Bench::SERVERS.select_names(s.quick[:servers] || s.servers).select { |spec| s.supports?(spec) }
      assert quick.any? { |spec| spec.family == :spindle }, "#{s.name}: no Spindle engine under --quick"
      next unless full.any? { |spec| spec.family == :peer }

      assert quick.any? { |spec| spec.family == :peer }, "#{s.name}: no peer under --quick"
    end
  end

  def test_quick_counts_are_within_the_scenario_s_own
    grid.each do |s|
      assert_empty Array(s.quick[:processes]) - s.processes, "#{s.name}: quick processes not among the scenario's"
      assert_empty Array(s.quick[:connections]) - s.connections, "#{s.name}: quick connections not among the scenario's" unless s.name == "postgres"
    end
  end

  def test_custom_scenarios_quick_servers_are_their_own
    SCENARIOS.values.select(&:custom).each do |s|
      names = s.quick[:servers] or next
      known = s.custom.const_get(:SERVERS).keys
      assert_empty names - known, "#{s.name}: unknown quick servers"
      assert_includes names, "spindle"
    end
  end

  # Only a run that may start a peer installs bench/Gemfile's peers (minutes
  # of building): a Spindle-only scenario, or --servers 'spindle-*', does not.
  def test_only_runs_that_start_a_peer_need_the_peers
    full = Bench::Options.parse(%w[all])
    spindle_only = Bench::Options.parse(%w[all --servers spindle-*])
    assert SCENARIOS["hello"].peers?(full)
    assert SCENARIOS["refork"].peers?(full), "a custom runner's own peers count"
    refute SCENARIOS["hello"].peers?(spindle_only)
    refute SCENARIOS["arenas"].peers?(full)
    refute SCENARIOS["refork-generations"].peers?(full)
  end

  # The run's budget, then one scenario's overrun grace, then stopping its
  # server: `bench/run all --quick` ends within ten minutes whatever happens.
  def test_a_quick_run_is_bounded_by_ten_minutes
    worst = Bench::QuickShape::RUN_BUDGET_S + Bench::Overrun::GRACE_S + Bench::ServerProcess::STOP_GRACE + 5
    assert_operator worst, :<, 600
  end
end
