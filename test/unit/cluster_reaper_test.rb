# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"

# Who left, without a master or a fork (FakeCluster): exits made up through
# the wait port, and what each costs: the log line, a failed boot, a failed
# refork, a successor that exited. The same runs on real processes in
# test/cluster/logging_cluster_test.rb and refork_failures_test.rb.
class ClusterReaperTest < Minitest::Test
  # Process::Status's reading side.
  Status = Struct.new(:exitstatus, :termsig) do
    def signaled? = !termsig.nil?
    def to_s = "status #{exitstatus}"
  end

  def setup
    @clock = FakeCluster::Clock.new
    @children = Spindle::Cluster::Children.new
    @spawner = FakeCluster::Spawner.new(@children, (500..).each, @clock)
    @phase = Spindle::Phase.new
    @out = StringIO.new
    @err = StringIO.new
    log = Spindle::Log.new(out: @out, err: @err, quiet: false)
    config = FakeCluster.config
    @supervisor = Spindle::Cluster::Supervisor.new(children: @children, spawner: @spawner, config: config,
                                                   signal: ->(_child, _name) {}, log: log, clock: @clock)
    @reforker = Spindle::Cluster::Reforker.new(children: @children, supervisor: @supervisor, config: config,
                                               log: log, clock: @clock)
    @takeover = Spindle::Cluster::Takeover.new(phase: @phase, services: nil, log: log, parent: nil, stop: ->(_) {})
    @exits = []
    @reaper = Spindle::Cluster::Reaper.new(children: @children, supervisor: @supervisor, reforker: @reforker,
                                           takeover: @takeover, phase: @phase, config: config, log: log,
                                           wait: -> { @exits.shift })
  end

  def worker(index, **options) = FakeCluster.add(@children, @clock, index: index, pid: 100 + index, **options)

  def test_an_unexpected_exit_is_an_error_and_an_expected_one_is_not
    worker(0)
    worker(1, state: :retiring)
    @exits = [[100, Status.new(nil, 9)], [101, Status.new(0, nil)], [999, Status.new(0, nil)]]
    @reaper.reap
    assert_empty @children.to_a
    assert_match(/worker 0 \(pid 100\) died: killed by signal KILL/, @err.string)
    assert_match(/worker 1 removed \(pid 101, exit status 0\)/, @out.string)
    assert_empty @exits, "every exit is taken, a stranger's too"
  end

  # A sidecar's exit (issue 67) is no child's: it goes to the others port.
  def test_an_exit_that_is_no_childs_goes_to_the_others_port
    others = []
    reaper = Spindle::Cluster::Reaper.new(children: @children, supervisor: @supervisor, reforker: @reforker,
                                          takeover: @takeover, phase: @phase, config: FakeCluster.config,
                                          log: FakeCluster.log, wait: -> { @exits.shift },
                                          others: ->(pid, status) { others << [pid, status.exitstatus] })
    worker(0)
    @exits = [[999, Status.new(3, nil)], [100, Status.new(0, nil)]]
    reaper.reap
    assert_equal [[999, 3]], others
    assert_empty @children.to_a
  end

  def test_every_exit_is_expected_once_the_master_drains
    worker(0)
    @phase.drain!
    @exits = [[100, Status.new(1, nil)]]
    @reaper.reap
    assert_match(/worker 0 removed \(pid 100, exit status 1\)/, @out.string)
    assert_empty @err.string
  end

  def test_a_worker_that_dies_while_it_boots_failed_to_boot
    worker(0, state: :booting)
    @exits = [[100, Status.new(1, nil)]]
    @reaper.reap
    assert_match(/worker 0 failed to boot \(1 in a row\)/, @err.string)
  end

  def test_a_mold_to_be_that_dies_fails_the_refork
    worker(0)
    candidate = worker(1, requests: 5)
    @reforker.start
    @exits = [[101, Status.new(nil, 11)]]
    @reaper.reap
    assert_match(/worker 1 \(becoming the mold of generation 1\) \(pid 101\) died: killed by signal SEGV/, @err.string)
    assert_match(/SEGV; refork to generation 1 failed; the other workers keep serving/, @err.string)
    refute @reforker.busy?
    assert_equal 1, @reforker.failures
    refute_includes @children.to_a, candidate
  end

  def test_the_waiting_ends_when_no_child_is_left
    @reaper = Spindle::Cluster::Reaper.new(children: @children, supervisor: @supervisor, reforker: @reforker,
                                           takeover: @takeover, phase: @phase, config: FakeCluster.config,
                                           log: FakeCluster.log, wait: -> { raise Errno::ECHILD })
    assert_nil @reaper.reap
  end
end
