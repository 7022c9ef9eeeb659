# frozen_string_literal: true

require "minitest/autorun"
require_relative "support/fake_clock"
require_relative "../lib/bench/timing"
require_relative "../lib/bench/overrun"

class TimingTest < Minitest::Test

  def test_each_scenario_and_the_total
    clock = FakeClock.new
    timing = Bench::Timing.new(clock: clock)
    capture_io do
      timing.time("hello") { clock.now += 29.64; "ok" }
      timing.time("refork-rps") { clock.now += 75.5; "failed: boom" }
    end
    assert_equal ["hello            29.6 s  ok", "refork-rps  1 min 15.5 s  failed: boom", "total       1 min 45.1 s"],
                 timing.lines
  end

  def test_a_scenario_that_raises_is_still_timed
    clock = FakeClock.new
    timing = Bench::Timing.new(clock: clock)
    capture_io { assert_raises(Interrupt) { timing.time("soak") { clock.now += 3; raise Interrupt } } }
    assert_equal ["soak", 3.0, "did not finish"], timing.rows.first.to_a
  end

  Quick = Struct.new(:quick, :deadline)

  def test_a_quick_scenario_past_its_deadline_and_grace_is_interrupted
    settings = Quick.new(true, Bench::Deadline.after(0, "a test budget"))
    error = assert_raises(Bench::Overrun) do
      Bench::Overrun.guard(settings, grace: 0.05) do
        sleep 5
      rescue StandardError
        flunk "a scenario's own rescue must not catch the overrun"
      end
    end
    assert_match(/after a test budget passed/, error.message)
  end

  def test_a_full_run_is_never_interrupted
    settings = Quick.new(false, Bench::Deadline.after(0, "the run's --deadline"))
    assert_equal :done, Bench::Overrun.guard(settings, grace: 0) { sleep 0.05; :done }
  end
end
