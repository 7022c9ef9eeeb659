# frozen_string_literal: true

require_relative "../test_helper"
require "spindle/process/phase"

# Spindle::Phase: the one place a process says whether it serves, drains or
# stops. It only moves forward, and tells its watchers once per move.
class PhaseTest < Minitest::Test
  def setup
    @phase = Spindle::Phase.new
    @seen = []
    @phase.on_change { |name| @seen << name }
  end

  def test_a_new_process_serves
    assert_predicate @phase, :serving?
    assert_predicate @phase, :accepting?
    assert_predicate @phase, :keep_alive?
    refute_predicate @phase, :stopping?
    refute_predicate @phase, :draining?
  end

  def test_the_drain_delay_still_accepts_but_closes_every_response
    assert @phase.leave!
    assert_predicate @phase, :stopping?
    assert_predicate @phase, :accepting?
    refute_predicate @phase, :keep_alive?
    refute_predicate @phase, :draining?
  end

  def test_draining_takes_nothing_new
    assert @phase.drain!
    refute_predicate @phase, :accepting?
    assert_predicate @phase, :draining?
    refute_predicate @phase, :forced?
    assert_equal [:draining], @seen
  end

  def test_it_never_moves_back_and_says_so
    @phase.force!
    refute @phase.drain!
    refute @phase.leave!
    refute @phase.force!
    assert_predicate @phase, :forced?
    assert_predicate @phase, :draining?
    assert_equal [:forced], @seen
  end

  def test_two_threads_stopping_at_once_move_it_once
    moved = Array.new(8) { Thread.new { @phase.drain! } }.map(&:value)
    assert_equal 1, moved.count(true)
    assert_equal [:draining], @seen
  end

  def test_handing_over_is_a_role_beside_the_phase
    refute_predicate @phase, :handed_over?
    @phase.hand_over!
    assert_predicate @phase, :handed_over?
    assert_predicate @phase, :serving?
  end

  # A stop, or the master's BecomeMold, says what follows the drain; the
  # first wins, so a stop racing the mold-to-be never drains the mold.
  def test_what_follows_the_drain_is_decided_once
    assert_nil @phase.once_drained
    assert @phase.end!
    assert @phase.end!, "a second stop finds the same decision"
    refute @phase.become_mold!
    assert_predicate @phase, :ending?
  end

  def test_a_worker_that_became_the_mold_is_not_ending
    assert @phase.become_mold!
    refute @phase.end!
    refute_predicate @phase, :ending?
    assert_equal :mold, @phase.once_drained
    assert_empty @seen, "deciding is no move"
  end
end
