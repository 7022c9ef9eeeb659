# frozen_string_literal: true

require "test_helper"
require "spindle/engine/sibling_share"

# The table a cluster's workers share (SiblingShare over SharedCounts): real
# forked processes write to it; the rule is asked with counts set by hand.
class SiblingShareTest < Minitest::Test
  Share = Spindle::Engine::SiblingShare

  def test_counts_written_by_a_forked_process_are_seen_by_its_parent
    counts = Spindle::SharedCounts.new(3)
    child = fork do
      counts[1] = 42
      counts.add(2, 5)
      exit!(0)
    end
    Process.wait(child)
    assert_equal [0, 42, 5], Array.new(3) { |i| counts[i] }
    assert counts.swap(1, 42, 7)
    refute counts.swap(1, 42, 8), "swapped though it no longer held 42"
    assert_equal 7, counts[1]
    assert_raises(IndexError) { counts[3] }
  end

  def test_a_worker_is_ahead_only_by_more_than_the_slack_of_a_live_sibling
    me, sibling = two_workers
    sibling.held = 1
    refute me.ahead?(1 + Share::SLACK), "within the slack"
    assert me.ahead?(2 + Share::SLACK)
    sibling.leave
    refute me.ahead?(100), "a sibling that left is not waited for"
  end

  def test_the_slot_of_a_worker_that_died_is_freed
    counts = Share.table(2)
    dead = fork { exit!(0) }
    Process.wait(dead)
    Share.new(counts).join(dead) # it joined, then was killed before leaving
    me = Share.new(counts)
    assert me.join
    refute me.ahead?(100), "a dead sibling is not waited for"
    assert Share.new(counts).join, "the dead worker's slot is taken again"
    refute Share.new(counts).join, "both slots taken by live processes"
  end

  def test_a_worker_defers_until_its_sibling_takes_none_then_takes_slack_more
    me, sibling = two_workers
    deference = me.deference
    assert deference.defer?(5), "ahead of an idle sibling: it goes first"
    refute deference.defer?(5), "the sibling took nothing meanwhile: a stall"
    refute deference.defer?(5 + Share::SLACK - 1)
    assert deference.defer?(5 + Share::SLACK), "a stall ends after SLACK more clients"
    sibling.accepted!(1)
    assert deference.defer?(5), "the sibling took one: no stall, and 5 is more than SLACK above its 1"
  end

  def test_a_worker_within_the_slack_never_defers
    me, sibling = two_workers
    sibling.held = 3
    refute me.deference.defer?(3 + Share::SLACK)
  end

  private

  # Two workers of one cluster, in this process (one slot each).
  def two_workers
    counts = Share.table(2)
    [Share.new(counts), Share.new(counts)].each { |share| assert share.join }
  end
end
