# frozen_string_literal: true

require "socket"
require_relative "../test_helper"
require_relative "../support/fake_cluster"
require_relative "../support/free_port"

# The master's side services without a master (FakeCluster): the metrics
# endpoint opened at once, or, for a successor, tried again each
# METRICS_RETRY on the fake clock until the parent lets go of the address
# (a real listener holds it here); and the systemd notes of a master not in
# charge. The same runs on real processes in test/cluster/metrics_test.rb and
# test/integration/systemd_notify_test.rb.
class ClusterMasterServicesTest < Minitest::Test
  include FreePort
  MasterServices = Spindle::Cluster::MasterServices

  def setup
    @clock = FakeCluster::Clock.new
    @spawner = FakeCluster::Spawner.new(Spindle::Cluster::Children.new, (500..).each, @clock)
    @out = StringIO.new
    @log = Spindle::Log.new(out: @out, err: StringIO.new, quiet: false)
  end

  def teardown
    @services&.close
    @holder&.close
  end

  def build(port)
    @services = MasterServices.new(config: FakeCluster.config(metrics: "tcp://127.0.0.1:#{port}"), log: @log,
                                   queue: [], clock: @clock, in_charge: -> { true }, notes: FakeCluster::Notes.new)
    @services.attach(@spawner)
  end

  def listening?(port)
    TCPSocket.new("127.0.0.1", port).close
    true
  rescue Errno::ECONNREFUSED
    false
  end

  def test_a_master_in_charge_serves_metrics_at_once
    port = free_port
    build(port)
    @services.open_metrics(nil)
    refute @services.metrics_waiting?
    assert listening?(port)
    assert_equal 1, @spawner.closed_in_child.size, "workers forked from now on close the listener"
    assert_match(%r{metrics at tcp://127\.0\.0\.1:#{port} \(GET /metrics\)}, @out.string)
  end

  def test_a_successor_tries_again_each_second_until_its_parent_lets_go
    @holder = TCPServer.new("127.0.0.1", 0) # the parent's metrics listener
    port = @holder.local_address.ip_port
    build(port)
    @services.open_metrics(4242)
    assert @services.metrics_waiting?
    assert_match(/once the previous master \(pid 4242\) lets it go/, @out.string)

    @services.tick
    assert @services.metrics_waiting?, "the address is still held"

    @holder.close
    @services.tick
    assert @services.metrics_waiting?, "the next try is only due after METRICS_RETRY"
    refute listening?(port)

    @clock.advance(MasterServices::METRICS_RETRY)
    @services.tick
    refute @services.metrics_waiting?
    assert listening?(port)
    assert_equal 1, @spawner.closed_in_child.size

    @services.let_go_of_metrics
    refute listening?(port)
  end

  # What a notifier is asked to send, by name.
  class Notifier
    attr_reader :sent

    def initialize = @sent = []
    def ready(**fields) = @sent << [:ready, fields]
    def reloading(**fields) = @sent << [:reloading, fields]
    def stopping(**fields) = @sent << [:stopping, fields]
    def status(text) = @sent << [:status, text]
  end

  def test_a_master_not_in_charge_tells_systemd_nothing
    notifier = Notifier.new
    in_charge = false
    notes = Spindle::Systemd::ClusterNotes.new(notifier, nil).speaking_when(-> { in_charge })
    children = Spindle::Cluster::Children.new
    FakeCluster.add(children, @clock, index: 0, pid: 100)
    notes.tick(children, 1, 0, stopping: false)
    notes.reloading("hot restart")
    notes.reloaded("done")
    notes.stopping("graceful")
    assert_empty notifier.sent

    in_charge = true
    notes.tick(children, 1, 0, stopping: false)
    notes.stopping("graceful")
    notes.stopping("graceful")
    assert_equal %i[ready stopping], notifier.sent.map(&:first), "READY once every worker serves; STOPPING once"
  end
end
