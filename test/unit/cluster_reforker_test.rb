# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"

# A refork from its order to its outcome, without a master or a fork
# (FakeCluster), beside a real Supervisor: the mold's deadline, the slot it
# holds, the trial of its first worker, and what a failure leaves behind.
# The same runs on real processes in test/cluster/refork_failures_test.rb.
class ClusterReforkerTest < Minitest::Test
  Message = Spindle::Cluster::Message

  def setup
    build
  end

  def build(workers: 2, **config)
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @spawner = FakeCluster::Spawner.new(@children, (500..).each, @clock)
    @signals = []
    @err = StringIO.new
    config = FakeCluster.config(workers: workers, **config)
    log = FakeCluster.log(@err)
    @supervisor = Spindle::Cluster::Supervisor.new(children: @children, spawner: @spawner, config: config,
                                                   signal: ->(child, name) { @signals << [child.pid, name] },
                                                   log: log, clock: @clock)
    @reforker = Spindle::Cluster::Reforker.new(children: @children, supervisor: @supervisor, config: config,
                                               log: log, clock: @clock)
    @workers = Array.new(workers) { |i| worker(i, requests: 10 * i) }
  end

  def worker(index, **options) = FakeCluster.add(@children, @clock, index: index, pid: 100 + index, **options)

  def refill = @supervisor.refill(held: @reforker.held_slots)

  # The busiest worker becomes the mold; its slot is kept for the new
  # generation's first worker.
  def start
    assert_nil @reforker.start
    candidate = @workers.last
    assert_equal :mold_pending, candidate.state
    assert_equal [Message::BecomeMold.new(generation: 1)], FakeCluster.told(candidate)
    candidate
  end

  def ready(candidate)
    @reforker.mold_ready(candidate, Message::MoldReady.new(pid: 900, generation: 1))
    @children.find { |c| c.trial }
  end

  def test_a_second_refork_is_refused_while_one_is_under_way
    start
    assert_equal "refork ignored: the refork to generation 1 is under way", @reforker.start
  end

  # The outage of issue 65, item 1: a worker killed while the mold-to-be
  # hangs left its slot empty until the refork ended.
  def test_a_worker_lost_while_the_mold_is_made_is_replaced_at_once_from_the_master
    start
    @children.remove(@workers.first) # kill -9, reaped
    refill
    assert_equal [[0, "master"]], @spawner.spawned
    assert_equal [1], @reforker.held_slots
  end

  def test_a_mold_to_be_silent_past_the_worker_timeout_after_draining_fails_the_refork
    candidate = start
    @clock.advance(10.5) # its last check-in said it had drained; the hook hangs since
    assert_equal :failed, @reforker.check
    assert_equal [[101, :URG]], @signals, "its threads are logged before the KILL"
    assert_equal :killed, candidate.state
    assert_match(/refork to generation 1 failed: worker 1 \(pid 101\) did not become the mold within 10.0s \(--worker-timeout\) of draining: its before_refork hook or heap warm-up did not finish; logging its threads, then killing it/,
                 @err.string)
    assert_equal [1, 0], [@reforker.failures, @reforker.generation]
    report = @reforker.report
    assert_equal ["idle", nil, 1], [report["state"], report["generation"], report["last_failure"]["generation"]]
    assert_match(/before_refork hook/, report["last_failure"]["reason"])

    refill
    assert_equal [[1, "master"]], @spawner.spawned, "the slot it held is refilled from the master"
  end

  def test_a_request_past_the_worker_timeout_in_the_drain_fails_the_refork
    candidate = start
    candidate.checkin = Message::Checkin.new(requests: 10, in_flight: 1, oldest_request_age: 10.5)
    assert_equal :failed, @reforker.check
    assert_match(/did not finish a request within 10.0s \(--worker-timeout\) while it drained/, @err.string)
  end

  def test_a_mold_to_be_that_still_checks_in_is_given_time
    candidate = start
    @clock.advance(9)
    candidate.last_checkin = @clock.now
    @clock.advance(9)
    assert_nil @reforker.check
    assert_empty @signals
  end

  def test_a_mold_to_be_that_dies_fails_the_refork_and_automatic_reforks_wait
    build(refork_after: [5])
    candidate = start
    @children.remove(candidate)
    @reforker.exited(candidate, "exit status 1")
    assert_equal [1, "worker 1 died while it became the mold (exit status 1)"],
                 [@reforker.failures, @reforker.report["last_failure"]["reason"]]
    assert_empty @err.string, "the master's exit line says so already"
    @workers.first.checkin = Message::Checkin.new(requests: 50)
    refute @reforker.due?, "--refork-after waits for the next generation"
  end

  # The first worker comes from the new mold; the others still from the master.
  def test_the_new_mold_forks_the_first_worker_and_is_proved_when_it_serves
    candidate = start
    trial = ready(candidate)
    assert_equal [[1, "mold 1"]], @spawner.spawned
    assert_equal [:mold_trial, 1], [candidate.state, trial.index]
    assert_nil @children.mold, "a mold on trial forks no refill"

    assert_nil @reforker.check
    trial.state = :serving
    trial.booted_at = Time.now
    assert_equal :proved, @reforker.check
    assert_equal [:mold, 1, false], [candidate.state, @reforker.generation, trial.trial]
    assert_equal "idle", @reforker.report["state"]
  end

  def test_the_previous_mold_is_retired_only_once_the_new_generation_serves
    previous = FakeCluster.add(@children, @clock, index: 0, generation: 0, pid: 800, state: :mold)
    candidate = start
    trial = ready(candidate)
    assert_equal :mold, previous.state
    trial.booted_at = Time.now
    @reforker.check
    assert_equal [:mold_retiring, [:eof]], [previous.state, FakeCluster.told(previous)]
  end

  # Issue 65, item 1: with -w 1 a failing after_refork hook left no worker
  # while the log said the refork was done; with -w 2 the slot was forked
  # again and again from the bad mold.
  def test_a_first_worker_that_exits_before_serving_fails_the_refork_and_its_slot_comes_from_the_master
    build(workers: 1)
    candidate = start
    trial = ready(candidate)
    @children.remove(trial) # exited before Booted: its after_refork hook raised
    @supervisor.boot_failed(trial)
    assert_equal :failed, @reforker.check
    assert_equal [:mold_retiring, [:eof], 0], [candidate.state, FakeCluster.told(candidate), @reforker.generation]
    assert_match(/refork to generation 1 failed: worker 0, the first forked from the new mold, exited before it served \(see its after_refork hook\); the slot is refilled from the master/,
                 @err.string)
    refute_match(/failed to boot/, @err.string, "no boot back-off: the app boots, the mold's workers did not")

    refill
    assert_equal [[0, "mold 1"], [0, "master"]], @spawner.spawned
  end

  def test_a_first_worker_that_hangs_in_its_boot_fails_the_refork
    candidate = start
    trial = ready(candidate)
    @clock.advance(10.5)
    @workers.first.last_checkin = @clock.now
    @supervisor.check_timeouts
    assert_equal :failed, @reforker.check
    assert_match(/worker 1, the first forked from the new mold, did not boot within 10.0s/, @err.string)
    assert_equal [:exited, :mold_retiring], [trial.state, candidate.state]
  end

  def test_a_new_mold_that_dies_during_the_trial_fails_the_refork_and_dismisses_its_worker
    candidate = start
    trial = ready(candidate)
    @children.remove(candidate)
    @reforker.exited(candidate, "killed by signal KILL")
    assert_equal :exited, trial.state
    assert_match(/the new mold died before its first worker served/, @reforker.report["last_failure"]["reason"])
    assert_empty @reforker.held_slots
  end

  def test_a_mold_ready_from_a_mold_to_be_already_given_up_is_ignored
    candidate = start
    @clock.advance(10.5)
    @reforker.check
    @reforker.mold_ready(candidate, Message::MoldReady.new(pid: 101, generation: 1))
    assert_equal :killed, candidate.state
    assert_empty @spawner.spawned.select { |_, from| from == "mold 1" }
  end

  # The master's stop began while the mold-to-be drained or ran its hook:
  # a worker forked from the mold now was never told to stop, and the
  # master waited for it and the mold for ever.
  def test_a_mold_ready_once_the_master_stops_forks_nothing_and_is_told_to_go
    candidate = start
    FakeCluster.told(candidate)
    @reforker.mold_ready(candidate, Message::MoldReady.new(pid: 900, generation: 1), stopping: true)
    assert_equal [:mold_retiring, 900, [:eof]], [candidate.state, candidate.pid, FakeCluster.told(candidate)]
    assert_empty @spawner.spawned.select { |_, from| from == "mold 1" }
    refute @reforker.busy?
  end
end
