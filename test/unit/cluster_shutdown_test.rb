# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"

# The master's stop through its Phase, without a master or a fork
# (FakeCluster): the drain, the drain delay, and the stop at once with its
# grace before the KILL. The same runs on real processes in
# test/cluster/cluster_test.rb and test/integration/health_path_test.rb.
class ClusterShutdownTest < Minitest::Test
  Message = Spindle::Cluster::Message
  Shutdown = Spindle::Cluster::Shutdown

  def build(drain_delay: 0)
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @phase = Spindle::Phase.new
    @notes = FakeCluster::Notes.new
    @killed = []
    @stopped_listening = 0
    @ended = 0
    @err = StringIO.new
    @shutdown = Shutdown.new(phase: @phase, children: @children, config: FakeCluster.config(drain_delay: drain_delay),
                             log: FakeCluster.log(@err), clock: @clock, notes: @notes,
                             kill: ->(child, name) { @killed << [child.pid, name] },
                             stop_listening: -> { @stopped_listening += 1 }, forced_end: -> { @ended += 1 })
    @workers = Array.new(2) { |i| FakeCluster.add(@children, @clock, index: i, pid: 100 + i) }
  end

  def told_all = @workers.map { |w| FakeCluster.told(w) }

  def test_term_drains_within_the_timeout_and_stops_listening
    build
    @shutdown.signal(:TERM)
    assert_equal :draining, @phase.name
    assert_equal [[Message::Stop.new(how: :timed)]] * 2, told_all
    assert_equal 1, @stopped_listening
    assert_equal [[:stopping, "graceful"]], @notes.said
    refute @shutdown.done?, "two workers are still there"

    @workers.each { |w| @children.remove(w) }
    assert @shutdown.done?
  end

  def test_quit_drains_with_no_limit
    build
    @shutdown.signal(:QUIT)
    assert_equal [[Message::Stop.new(how: :unlimited)]] * 2, told_all
    assert_equal [[:stopping, "drain"]], @notes.said
  end

  def test_the_drain_delay_keeps_serving_then_drains_as_the_signal_said
    build(drain_delay: 5)
    @shutdown.signal(:QUIT)
    assert_equal :leaving, @phase.name
    assert_equal [[Message::LeavePool.new(delay: 5)]] * 2, told_all
    assert_equal 0, @stopped_listening, "the delay still accepts"
    assert_equal [[:stopping, "drain delay, then drain"]], @notes.said

    @clock.advance(4.9)
    @shutdown.tick
    assert_equal :leaving, @phase.name
    assert_equal [[], []], told_all

    @clock.advance(0.1)
    @shutdown.tick
    assert_equal :draining, @phase.name
    assert_equal [[Message::Stop.new(how: :unlimited)]] * 2, told_all
    assert_equal 1, @stopped_listening
  end

  def test_a_second_signal_during_the_delay_stops_at_once
    build(drain_delay: 5)
    @shutdown.signal(:TERM)
    told_all
    @shutdown.signal(:TERM)
    assert_forced
  end

  def test_a_second_signal_during_the_drain_stops_at_once
    build
    @shutdown.signal(:TERM)
    told_all
    @shutdown.signal(:INT)
    assert_forced
  end

  # A successor that serves, or one that gives up, during a drain: the same
  # as a second signal.
  def test_a_stop_while_draining_stops_at_once
    build
    @shutdown.stop(:TERM)
    told_all
    @shutdown.stop(:QUIT)
    assert_forced
  end

  # Nothing waits in a nested loop: the master's loop turns on, and each
  # tick decides whether the grace is over.
  def test_the_stop_at_once_kills_what_is_left_after_the_grace
    build
    @shutdown.signal(:TERM)
    @shutdown.signal(:TERM)
    assert_equal Shutdown::FORCE_GRACE, @shutdown.wait_limit(10)
    @clock.advance(Shutdown::FORCE_GRACE - 0.5)
    assert_equal 0.5, @shutdown.wait_limit(10)
    @shutdown.tick
    assert_empty @killed
    assert_equal 0, @ended

    @clock.advance(0.5)
    assert_equal 0, @shutdown.wait_limit(10)
    @shutdown.tick
    assert_equal [[100, :KILL], [101, :KILL]], @killed
    assert_equal 1, @ended
  end

  def test_the_stop_at_once_ends_as_soon_as_every_child_is_gone
    build
    @shutdown.signal(:TERM)
    @shutdown.signal(:TERM)
    @children.remove(@workers.first)
    @shutdown.tick
    assert_equal 0, @ended, "one worker is left"

    @children.remove(@workers.last)
    @shutdown.tick
    assert_equal 1, @ended
  end

  def test_a_third_signal_changes_nothing
    build
    @shutdown.signal(:TERM)
    @shutdown.signal(:TERM)
    told_all
    @shutdown.signal(:TERM)
    assert_equal [[], []], told_all
    assert_equal 1, @err.string.scan("second stop signal").size
  end

  # A mold serves nothing and reads no orders: TERM ends it. A worker
  # draining to become the mold still reads its channel.
  def test_a_mold_is_sent_term_and_a_mold_to_be_its_order
    build
    mold = FakeCluster.add(@children, @clock, index: 0, pid: 300, state: :mold)
    @workers.last.state = :mold_pending
    @shutdown.signal(:TERM)
    assert_equal [[300, :TERM]], @killed
    assert_empty FakeCluster.told(mold)
    assert_equal [Message::Stop.new(how: :timed)], FakeCluster.told(@workers.last)
  end

  def test_nothing_waits_on_the_loop_before_a_stop_at_once
    build
    assert_equal 0.5, @shutdown.wait_limit(0.5)
    @shutdown.signal(:TERM)
    assert_equal 0.5, @shutdown.wait_limit(0.5)
  end

  private

  def assert_forced
    assert_equal :forced, @phase.name
    assert_equal [[Message::Stop.new(how: :now)]] * 2, told_all
    assert_match(/second stop signal: stopping 2 child process\(es\) at once/, @err.string)
  end
end
