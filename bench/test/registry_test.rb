# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# Which servers a --servers list picks: an explicit variant (a non-default
# Spindle flag) only by its exact name, so "spindle-*" and the default runs
# measure Spindle as it ships.
class RegistryTest < Minitest::Test
  VARIANT = "spindle-threads+cpu-affinity"

  def names(patterns) = Bench::SERVERS.select_names(patterns).map(&:name)

  def test_globs_and_the_default_leave_explicit_variants_out
    refute_includes names(%w[spindle-*]), VARIANT
    refute_includes names(nil), VARIANT
    assert_includes names(%w[spindle-*]), "spindle-threads"
  end

  def test_an_exact_name_picks_a_variant_with_its_flag
    assert_equal [VARIANT], names([VARIANT])
    spec = Bench::SERVERS.fetch(VARIANT)
    assert spec.spindle?
    scenario = Bench::Scenario.load_all.fetch("hello")
    launch = Bench::Launch.new(spec: spec, scenario: scenario, port: 1, threads: 5, processes: 1)
    assert_includes spec.command.call(launch), "--cpu-affinity"
  end
end
