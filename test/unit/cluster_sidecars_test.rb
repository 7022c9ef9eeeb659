# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"
require "spindle/cluster/sidecars"

# The sidecars (--sidecar) without a fork: a spawn port that hands out pids,
# a wait port that reports the exits the test makes up, a signal port that
# records, and FakeCluster's clock. The same runs on real processes in
# test/cluster/sidecars_cluster_test.rb.
class ClusterSidecarsTest < Minitest::Test
  Status = Struct.new(:exitstatus, :termsig) do
    def signaled? = !termsig.nil?
  end

  def setup
    @clock = FakeCluster::Clock.new
    @pids = (700..).each
    @spawned = []
    @signals = []
    @exits = {} # pid => status, reported once by the wait port
    @out = StringIO.new
    @err = StringIO.new
    @sidecars = build([{ name: "solid_queue", command: "bin/jobs" }, { name: "mailer", command: "bin/mailer" }])
  end

  def build(specs, spawn: nil)
    spawn ||= ->(command) { @pids.next.tap { |pid| @spawned << [command, pid] } }
    Spindle::Cluster::Sidecars.new(specs, log: Spindle::Log.new(out: @out, err: @err, quiet: false),
                                          stop_timeout: 30.0, clock: @clock, spawn: spawn,
                                          signal: ->(pid, name) { @signals << [pid, name] },
                                          wait: ->(pid) { @exits.key?(pid) ? [pid, @exits.delete(pid)] : nil })
  end

  def entry(name) = @sidecars.report.find { |s| s["name"] == name }

  def test_nothing_starts_before_start_and_each_starts_once
    @sidecars.tick
    assert_empty @spawned
    @sidecars.start
    @sidecars.start
    assert_equal [["bin/jobs", 700], ["bin/mailer", 701]], @spawned
    assert_match(/sidecar solid_queue started \(pid 700\): bin\/jobs/, @out.string)
    assert_equal({ "name" => "solid_queue", "command" => "bin/jobs", "pid" => 700, "restarts" => 0 },
                 entry("solid_queue").except("started_at"))
    refute_nil entry("solid_queue")["started_at"]
  end

  def test_one_that_dies_is_started_again_after_the_backoff_which_grows
    @sidecars.start
    @exits[700] = Status.new(1, nil)
    @sidecars.tick
    assert_nil entry("solid_queue")["pid"]
    assert_match(/sidecar solid_queue \(pid 700\) died: exit status 1; starting it again in 0.5s/, @err.string)
    @sidecars.tick
    assert_equal 2, @spawned.size, "not before the back-off is over"
    @clock.advance(0.5)
    @sidecars.tick
    assert_equal ["bin/jobs", 702], @spawned.last
    assert_equal 1, entry("solid_queue")["restarts"]
    assert_equal 701, entry("mailer")["pid"], "the other one is left alone"

    @exits[702] = Status.new(nil, 9)
    @sidecars.tick
    assert_match(/\(pid 702\) died: killed by signal KILL; starting it again in 1.0s/, @err.string)
  end

  def test_one_that_ran_long_enough_waits_the_first_backoff_again
    @sidecars.start
    @exits[700] = Status.new(1, nil)
    @sidecars.tick
    @clock.advance(0.5)
    @sidecars.tick # 702 started
    @clock.advance(Spindle::Cluster::Sidecars::STABLE)
    @exits[702] = Status.new(1, nil)
    @sidecars.tick
    assert_match(/\(pid 702\) died: exit status 1; starting it again in 0.5s/, @err.string)
  end

  def test_an_exit_the_masters_reaper_found_is_taken_and_others_are_not
    @sidecars.start
    refute @sidecars.reaped(999, Status.new(0, nil))
    assert @sidecars.reaped(701, Status.new(0, nil))
    assert_nil entry("mailer")["pid"]
  end

  def test_stop_sends_term_then_kills_the_group_after_the_timeout_and_starts_nothing
    @sidecars.start
    @exits[701] = Status.new(1, nil)
    @sidecars.tick # mailer waits for its back-off
    @sidecars.stop
    assert_equal [[700, :TERM]], @signals
    refute @sidecars.done?
    @clock.advance(29)
    @sidecars.tick
    assert_equal [[700, :TERM]], @signals
    @clock.advance(1)
    @sidecars.tick
    assert_equal [700, :TERM], @signals.first
    assert_equal [-700, :KILL], @signals.last, "its process group"
    @exits[700] = Status.new(nil, 9)
    @sidecars.tick
    assert @sidecars.done?
    assert_equal 2, @spawned.size, "nothing started once stopping"
    assert_match(/sidecar solid_queue stopped \(pid 700, killed by signal KILL\)/, @out.string)
  end

  def test_one_that_stops_on_term_is_not_killed
    @sidecars.start
    @sidecars.stop
    @exits[700] = Status.new(0, nil)
    @exits[701] = Status.new(0, nil)
    @sidecars.tick
    assert @sidecars.done?
    @clock.advance(60)
    @sidecars.tick
    assert_equal [[700, :TERM], [701, :TERM]], @signals
  end

  def test_kill_all_kills_every_running_one_now
    @sidecars.start
    @sidecars.kill_all
    assert_equal [[-700, :KILL], [-701, :KILL]], @signals
  end

  def test_a_command_that_cannot_start_is_tried_again_with_the_backoff
    failing = build([{ name: "x", command: "/nonexistent" }], spawn: ->(_) { raise Errno::ENOENT, "/nonexistent" })
    failing.start
    assert_match(/sidecar x could not start: No such file or directory - \/nonexistent; starting it again in 0.5s/,
                 @err.string)
    assert failing.done?
  end

  def test_none_configured_is_done_and_reports_nothing
    none = build([])
    none.start
    none.tick
    assert none.done?
    assert_empty none.report
  end
end
