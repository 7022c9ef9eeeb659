# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"

# The master's supervision without a master or a fork (FakeCluster): the
# worker count, refilling empty slots, the boot back-off, and
# --worker-timeout with its thread dump before the KILL. The same rules run
# in forked processes in test/cluster/ (cluster_test.rb,
# refork_failures_test.rb, worker_timeout_dump_test.rb).
class ClusterSupervisorTest < Minitest::Test
  Supervisor = Spindle::Cluster::Supervisor

  def setup
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @spawner = FakeCluster::Spawner.new(@children, (500..).each, @clock)
    @signals = []
    @err = StringIO.new
    @supervisor = supervisor
  end

  def supervisor(**config)
    Supervisor.new(children: @children, spawner: @spawner, config: FakeCluster.config(**config),
                   signal: ->(child, name) { @signals << [child.pid, name] }, log: FakeCluster.log(@err),
                   clock: @clock)
  end

  def worker(index, **options) = FakeCluster.add(@children, @clock, index: index, pid: 100 + index, **options)

  def test_every_empty_slot_is_refilled_at_once_except_a_held_one
    worker(1)
    @supervisor.refill(held: [])
    assert_equal [[0, "master"]], @spawner.spawned

    @children.to_a.each { |c| @children.remove(c) }
    @supervisor.refill(held: [1])
    assert_equal [[0, "master"], [0, "master"]], @spawner.spawned, "slot 1 is held: only slot 0 is refilled"
  end

  def test_a_slot_with_two_workers_during_a_rollout_is_not_refilled_again
    worker(0)
    worker(0, state: :booting) # slot 0's replacement
    @supervisor.refill(held: [])
    assert_empty @spawner.spawned, "2 workers for 2 slots: nothing is missing"
  end

  def test_refills_wait_out_the_back_off_after_a_failed_boot
    failed = worker(0, state: :booting)
    @supervisor.boot_failed(failed)
    @children.remove(failed)
    worker(1)
    @supervisor.refill
    assert_empty @spawner.spawned
    assert_match(/worker 0 failed to boot \(1 in a row\); next try in 0.5s/, @err.string)

    @clock.advance(0.5)
    @supervisor.refill
    assert_equal [[0, "master"]], @spawner.spawned
  end

  # The first worker of a refork's generation fails the refork (Reforker),
  # not the app: the slot is refilled from the previous generation at once.
  def test_a_refork_trial_that_fails_to_boot_is_no_boot_failure
    trial = worker(0, state: :booting)
    trial.trial = true
    @supervisor.boot_failed(trial)
    @children.remove(trial)
    worker(1)
    @supervisor.refill
    assert_equal [[0, "master"]], @spawner.spawned
    assert_empty @err.string
  end

  def test_remove_worker_at_one_worker_says_why_and_does_nothing
    @supervisor = supervisor(workers: 1)
    only = worker(0)
    assert_match(/remove-worker ignored: 1 worker is the fewest a cluster runs/, @supervisor.shrink)
    assert_equal [1, :serving], [@supervisor.desired, only.state]
    assert_empty @signals
  end

  def test_remove_worker_retires_the_highest_slot
    worker(0)
    last = worker(1)
    assert_nil @supervisor.shrink
    assert_equal [1, :retiring], [@supervisor.desired, last.state]
    assert_equal [[101, :TERM]], @signals
  end

  # URG first (the worker logs its threads and requests), KILL once the
  # grace is over; the slot is refilled meanwhile.
  def test_a_stuck_worker_is_asked_for_its_threads_then_killed_after_the_grace
    stuck = worker(0)
    worker(1)
    @clock.advance(10.5) # no check-in for longer than --worker-timeout
    @children.find { |c| c.index == 1 }.last_checkin = @clock.now
    @supervisor.check_timeouts
    assert_equal [[100, :URG]], @signals
    assert_equal :killed, stuck.state
    assert_match(/worker 0 \(pid 100\) is stuck \(silent 10.5s, oldest request 0.0s\); logging its threads, then killing it/,
                 @err.string)

    @supervisor.refill
    assert_equal [[0, "master"]], @spawner.spawned, "the stuck worker's slot does not wait for its KILL"

    @supervisor.check_timeouts
    assert_equal [[100, :URG]], @signals, "the grace is not over yet"
    @clock.advance(Supervisor::DUMP_GRACE)
    @supervisor.check_timeouts
    @supervisor.check_timeouts
    assert_equal [[100, :URG], [100, :KILL]], @signals, "one KILL, once"
  end

  def test_a_worker_whose_dump_is_written_is_killed_at_once
    stuck = worker(0)
    stuck.checkin = Spindle::Cluster::Message::Checkin.new(requests: 3, in_flight: 1, oldest_request_age: 11.0)
    @supervisor.check_timeouts
    @supervisor.dumped(stuck)
    @supervisor.dumped(stuck)
    assert_equal [[100, :URG], [100, :KILL]], @signals
  end

  # --request-timeout: a request past twice its deadline gets its worker
  # replaced gracefully (URG for the dump, then TERM: it drains), once;
  # --worker-timeout still kills it should the drain not end.
  def test_a_worker_with_a_request_past_twice_its_deadline_is_replaced_gracefully
    @supervisor = supervisor(request_timeout: 0.5)
    late = worker(0)
    worker(1)
    late.checkin = Spindle::Cluster::Message::Checkin.new(requests: 3, in_flight: 2, oldest_request_age: 1.0)
    @supervisor.check_timeouts
    assert_empty @signals, "at twice the deadline, not yet past it"

    late.checkin = Spindle::Cluster::Message::Checkin.new(requests: 3, in_flight: 2, oldest_request_age: 1.1)
    @supervisor.check_timeouts
    @supervisor.check_timeouts
    assert_equal [[100, :URG], [100, :TERM]], @signals, "asked for its dump, then to drain; once"
    assert_equal :retiring, late.state
    assert_match(/worker 0 \(pid 100\) has a request running past twice its deadline \(1.1s, deadline 0.5s\); logging its threads, then replacing it/,
                 @err.string)
    @supervisor.refill
    assert_equal [[0, "master"]], @spawner.spawned, "its replacement starts while it drains"

    @clock.advance(10.5)
    late.checkin = Spindle::Cluster::Message::Checkin.new(requests: 3, in_flight: 1, oldest_request_age: 11.6)
    late.last_checkin = @clock.now
    @supervisor.check_timeouts
    assert_equal [[100, :URG], [100, :TERM], [100, :URG]], @signals.select { |pid, _| pid == 100 },
                 "--worker-timeout still holds"
    assert_equal :killed, late.state
  end

  def test_without_request_timeout_a_long_request_waits_for_worker_timeout
    long = worker(0)
    long.checkin = Spindle::Cluster::Message::Checkin.new(requests: 3, in_flight: 1, oldest_request_age: 9.0)
    @supervisor.check_timeouts
    assert_empty @signals
  end

  def test_a_boot_that_hangs_is_condemned_and_counts_as_a_failed_boot
    hanging = worker(0, state: :booting)
    forked_by_a_mold = FakeCluster.add(@children, @clock, index: 1, state: :booting) # no pid yet
    @clock.advance(10.5)
    @supervisor.check_timeouts
    assert_equal [[100, :URG]], @signals
    assert_equal [:killed, :exited], [hanging.state, forked_by_a_mold.state]
    assert_equal 2, @err.string.scan(/did not boot within 10.0s; killing it/).size
    assert_match(/failed to boot \(2 in a row\)/, @err.string)
  end

  # Message::Booted: it serves, and the back-off starts over; unless the
  # master let it go meanwhile (told to drain now) or condemned it.
  def test_a_boot_counts_unless_the_worker_was_let_go_meanwhile
    @supervisor.boot_failed(worker(3, state: :booting))
    booting = worker(0, state: :booting)
    assert @supervisor.booted(booting, 200)
    assert_equal [:serving, 200], [booting.state, booting.pid]
    @supervisor.boot_failed(worker(4, state: :booting))
    assert_equal 2, @err.string.scan("next try in 0.5s").size, "the back-off started over"

    dismissed = worker(1, state: :retiring)
    refute @supervisor.booted(dismissed, 201)
    assert_equal [[201, :TERM]], @signals
    condemned = worker(2, state: :killed)
    refute @supervisor.booted(condemned, 202)
    assert_equal :killed, condemned.state
  end

  # A worker that dies before it booted leaves only its closed channel.
  def test_a_channel_closed_before_the_boot_is_a_failed_boot
    unborn = FakeCluster.add(@children, @clock, index: 0, state: :booting)
    @supervisor.channel_closed(unborn)
    refute_includes @children.to_a, unborn
    assert_match(/worker 0 failed to boot/, @err.string)

    serving = worker(1)
    @supervisor.channel_closed(serving)
    assert serving.channel_closed, "reaped by its pid"
    assert_includes @children.to_a, serving
  end
end
