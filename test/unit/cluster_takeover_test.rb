# frozen_string_literal: true

require "tmpdir"
require_relative "../test_helper"
require_relative "../support/fake_cluster"

# Both roles of a hot restart in the master, and the side services that
# move with it, without a second master or a fork (FakeCluster): a pretended
# parent pid, a successor "started" by a port, the control socket, pid file
# and metrics endpoint for real in a temporary directory. The same runs on
# real processes in test/cluster/operations_test.rb and
# test/cluster/restart_failures_test.rb.
class ClusterTakeoverTest < Minitest::Test
  Takeover = Spindle::Cluster::Takeover
  MasterServices = Spindle::Cluster::MasterServices

  def setup
    @dir = Dir.mktmpdir("spn-takeover")
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @spawner = FakeCluster::Spawner.new(@children, (500..).each, @clock)
    @phase = Spindle::Phase.new
    @notes = FakeCluster::Notes.new
    @err = StringIO.new
    @out = StringIO.new
    @log = Spindle::Log.new(out: @out, err: @err, quiet: false)
    @sent = []
    @stops = []
  end

  def teardown
    @services&.close
    FileUtils.rm_rf(@dir)
  end

  def build(parent:, **config)
    config = FakeCluster.config(pidfile: File.join(@dir, "spindle.pid"),
                                control: "unix://#{File.join(@dir, 'ctl.sock')}", **config)
    @services = MasterServices.new(config: config, log: @log, queue: [], clock: @clock,
                                   in_charge: -> { @takeover.in_charge? }, notes: @notes)
    @takeover = Takeover.new(phase: @phase, services: @services, log: @log, parent: parent,
                             stop: ->(how) { @stops << how }, kill: ->(pid, name) { @sent << [pid, name] },
                             launch: ->(_listeners) { 4343 })
    @services.claim_pid_file(parent)
    @services.open_control unless parent
    @services.attach(@spawner)
  end

  def pid_file = File.join(@dir, "spindle.pid")
  def control_socket = File.join(@dir, "ctl.sock")

  def test_a_successor_leaves_everything_to_its_parent_until_its_workers_serve
    build(parent: 4242)
    refute @takeover.in_charge?
    refute @takeover.owns_socket_files?
    refute File.exist?(pid_file)
    refute File.exist?(control_socket)

    @takeover.serving(2)
    assert @takeover.in_charge?
    assert @takeover.owns_socket_files?
    assert_equal Process.pid.to_s, File.read(pid_file).strip
    assert File.socket?(control_socket)
    assert_includes @spawner.closed_in_child, @services.control.io, "workers forked from now on close it"
    assert_equal [[:took_over, 2]], @notes.said
    assert_equal [[4242, :QUIT]], @sent
    assert_match(/told the previous master \(pid 4242\) to drain/, @out.string)

    @takeover.serving(2)
    assert_equal [[4242, :QUIT]], @sent, "the parent is told once"
  end

  def test_a_successor_whose_worker_fails_to_boot_gives_up_once
    build(parent: 4242)
    worker = FakeCluster.add(@children, @clock, index: 1, state: :booting)
    @takeover.boot_failed(worker)
    @takeover.boot_failed(worker)
    assert_equal [:TERM], @stops
    assert @takeover.gave_up?
    refute @takeover.in_charge?
    refute @takeover.owns_socket_files?
    assert_match(/worker 1 failed to boot; this new master gives up and exits, the previous master \(pid 4242\)/,
                 @err.string)
    refute File.exist?(pid_file), "the parent's pid file is its own"
  end

  def test_a_master_in_charge_hands_over_once_its_successor_says_it_serves
    build(parent: nil)
    assert_equal Process.pid.to_s, File.read(pid_file).strip
    refute @takeover.quit, "a QUIT from anyone else is a drain"

    @takeover.start([])
    assert_equal 4343, @takeover.successor
    refute @takeover.owns_socket_files?, "the successor is handed the sockets"
    assert_equal [[:reloading, "hot restart: new master pid 4343 starting"]], @notes.said

    @takeover.start([])
    assert_match(/hot restart ignored: new master pid 4343 is starting/, @out.string)

    assert @takeover.quit
    assert @phase.handed_over?
    refute @takeover.in_charge?
  end

  def test_a_successor_that_exits_first_leaves_its_parent_in_charge
    build(parent: nil)
    @takeover.start([])
    @takeover.successor_exited("exit 1")
    assert_nil @takeover.successor
    assert @takeover.owns_socket_files?
    assert_match(/hot restart failed: new master pid 4343 exited \(exit 1\) before it served/, @err.string)
    assert_equal :reloaded, @notes.said.last.first
  end

  def test_no_successor_is_started_by_a_stopping_master
    build(parent: nil)
    @phase.leave!
    @takeover.start([])
    assert_nil @takeover.successor
    assert_match(/hot restart ignored: this master is stopping/, @out.string)
  end

  def test_no_successor_is_started_by_a_successor_before_it_takes_over
    build(parent: 4242)
    @takeover.start([])
    assert_nil @takeover.successor
    assert_match(/hot restart ignored: this master has not taken over yet/, @out.string)
  end
end
