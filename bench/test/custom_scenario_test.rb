# frozen_string_literal: true

require "minitest/autorun"
require_relative "support/fake_clock"
require_relative "../lib/bench"
require_relative "../lib/bench/custom_scenario"

# What every scenario with its own runner gets from CustomScenario: one trial
# at a time, skipped past the deadline, recorded as failed (with what it had
# measured so far) when it raises, and the --servers filter on its own names.
class CustomScenarioTest < Minitest::Test
  class Runner < Bench::CustomScenario
    def try(label, base, &block) = trial(label, base, &block)
    def names(list) = picked(list)
  end

  def setup
    @clock = FakeClock.new
    @scenario = Bench::Scenario.new(name: "custom-test", app: "hello.ru")
  end

  def runner(*argv)
    s = Bench::Options.parse(["custom-test", *argv])
    Runner.new(@scenario, s.with(deadline: Bench::Deadline.after(10, "a test budget", clock: @clock)))
  end

  def test_a_trial_merges_what_it_measured_into_its_base
    assert_equal({ mode: "a", requests: 3 }, runner.try("a", { mode: "a" }) { { requests: 3 } })
  end

  def test_a_trial_that_raises_keeps_what_it_had_and_says_why
    r = nil
    capture_io do
      r = runner.try("a", { mode: "a" }) do |partial|
        partial[:before] = 1
        raise "boom"
      end
    end
    assert_equal({ mode: "a", before: 1, failed: "RuntimeError: boom" }, r)
  end

  def test_past_the_deadline_a_trial_does_not_run
    run = runner
    @clock.now += 11
    ran = false
    r = nil
    capture_io { r = run.try("a", { mode: "a" }) { ran = true } }
    refute ran
    assert_equal "skipped: a test budget passed", r[:failed]
  end

  def test_every_record_has_the_same_frame_around_what_was_measured
    record = Bench::RunRecord.around(@scenario, { tool: "wrk" }) { { measurements: [:m] } }
    assert_equal %i[scenario started_at finished_at machine load_generator measurements spindle_source], record.keys
    assert_equal "bench/apps/hello.ru", record[:scenario][:app]
    refute record[:spindle_source][:changed]
  end

  def test_servers_picks_among_the_scenario_s_own_names
    assert_equal %w[spindle puma], runner.names(%w[spindle puma pitchfork]).first(2)
    assert_equal %w[puma pitchfork], runner("--servers", "p*").names(%w[spindle puma pitchfork])
  end
end
