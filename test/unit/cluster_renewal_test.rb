# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"

# Which workers the master replaces and when, without a master or a fork
# (FakeCluster) beside a real Supervisor and Reforker: USR1's phased restart
# one worker at a time, a worker over --worker-memory-limit, and nothing
# while the master drains. The same runs on real processes in
# test/cluster/operations_test.rb.
class ClusterRenewalTest < Minitest::Test
  MIB = 1024 * 1024

  def setup
    build
  end

  def build(**config)
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @spawner = FakeCluster::Spawner.new(@children, (500..).each, @clock)
    @signals = []
    @out = StringIO.new
    @notes = FakeCluster::Notes.new
    @phase = Spindle::Phase.new
    @uss = {}
    config = FakeCluster.config(**config)
    log = Spindle::Log.new(out: @out, err: @out, quiet: false)
    supervisor = Spindle::Cluster::Supervisor.new(children: @children, spawner: @spawner, config: config,
                                                  signal: ->(child, name) { @signals << [child.pid, name] },
                                                  log: log, clock: @clock)
    reforker = Spindle::Cluster::Reforker.new(children: @children, supervisor: supervisor, config: config, log: log,
                                              clock: @clock)
    @renewal = Spindle::Cluster::Renewal.new(children: @children, supervisor: supervisor, reforker: reforker,
                                             phase: @phase, config: config, log: log, clock: @clock, notes: @notes,
                                             memory: ->(pid) { { uss: @uss.fetch(pid, 0) } })
    @workers = Array.new(2) { |i| FakeCluster.add(@children, @clock, index: i, pid: 100 + i) }
  end

  def newest = @children.to_a.last

  def test_a_phased_restart_replaces_one_worker_at_a_time
    @renewal.phased_restart
    assert_equal "phased restart", @renewal.reason
    assert_equal [[:reloading, "phased restart: replacing 2 worker(s)"]], @notes.said

    @renewal.tick
    assert_equal [[0, "master"]], @spawner.spawned
    @renewal.tick
    assert_equal [[0, "master"]], @spawner.spawned, "the replacement has not booted yet"
    assert_empty @signals

    newest.state = :serving
    @renewal.tick
    assert_equal [[100, :TERM]], @signals, "then the old worker goes"
    assert_equal [[0, "master"], [1, "master"]], @spawner.spawned

    newest.state = :serving
    @renewal.tick
    assert_equal [[100, :TERM], [101, :TERM]], @signals
    @renewal.tick
    assert_nil @renewal.reason
    assert_equal [:reloaded, "phased restart done"], @notes.said.last
  end

  def test_a_second_rollout_waits_for_the_first
    @renewal.phased_restart
    @renewal.phased_restart
    assert_match(/phased restart waits: phased restart in progress/, @out.string)
  end

  def test_a_worker_over_the_memory_limit_is_replaced_checked_every_few_seconds
    build(worker_memory_limit: 100)
    @renewal.tick
    assert_nil @renewal.reason, "nobody is over the limit"

    @uss[101] = 101 * MIB
    @clock.advance(Spindle::Cluster::Renewal::MEMORY_CHECK_EVERY - 1)
    @renewal.tick
    assert_nil @renewal.reason, "not checked again yet"

    @clock.advance(1)
    @renewal.tick
    assert_equal "worker 1 over 100 MiB", @renewal.reason
    assert_equal [[1, "master"]], @spawner.spawned
    assert_empty @notes.said, "not a reload: systemd hears nothing"
  end

  def test_nothing_advances_while_the_master_drains
    @renewal.phased_restart
    @phase.drain!
    @renewal.tick
    assert_empty @spawner.spawned
  end
end
