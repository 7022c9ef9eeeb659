# frozen_string_literal: true

require "minitest/autorun"
require "rbconfig"
require_relative "topology"
require_relative "waiting"

# The multi-host tests' base (test/topology/): three hosts running
# `bin/spindle -w 2` on test/support/apps/versioned.ru behind nginx or HAProxy
# from docs/deploy/, a fresh topology per test, torn down in teardown (and at
# exit, for a test interrupted mid-way; a run killed outright is swept by
# the next one). Skips, saying why, where network namespaces cannot work.
class TopologyCase < Minitest::Test
  include Waiting

  APP = File.join(Topology::ROOT, "test", "support", "apps", "versioned.ru")
  DEPLOY = File.join(Topology::ROOT, "bin", "spindle-rolling-deploy")
  # Enough requests on both sides of an event that the load is seen going on
  # through it, not a rate.
  SEEN = 200

  @live = []
  class << self
    attr_reader :live
  end
  Minitest.after_run { TopologyCase.live.each(&:teardown) }

  def setup
    reason = Topology.unavailable_reason
    skip "needs network namespaces: #{reason}" if reason

    @topology = Topology.new(hosts: 3)
    TopologyCase.live << @topology
    @version = File.join(@topology.dir, "VERSION")
    File.write(@version, "v1\n")
  end

  def teardown
    @topology&.teardown
    TopologyCase.live.delete(@topology)
  end

  # Three hosts serving version v1, and the load balancer in front. The
  # server answers the health checks itself (--health-path), as deployed.
  def start(lb, *args)
    @topology.start_spindles(APP, "--health-path", "/health", *args, env: lambda { |host|
      { "SPINDLE_TOPOLOGY_VERSION_FILE" => @version, "SPINDLE_TOPOLOGY_HOST" => host.to_s }
    })
    @topology.start_lb(lb)
  end

  # Load through the balancer, one client thread of each kind, already
  # answered SEEN times when this returns.
  def start_load
    load = @topology.start_load(threads: 1, max_seconds: 300, max_requests: 300_000)
    wait_for_more(load, 0, "the load flowing through the load balancer")
    load
  end

  def wait_for_more(load, count, what)
    wait_until(what, deadline: 60, interval: 0.2) do
      flunk "the load client exited:\n#{load.log_tail}" unless load.alive?
      load.count >= count + SEEN
    end
  end

  def deploy_args(lb)
    hosts = @topology.hosts.map { |h| "#{h}=#{@topology.host_url(h)},unix://#{@topology.control_path(h)}" }
    haproxy = lb == :haproxy ? ["--haproxy", "#{@topology.lb_config.admin_socket},spindle"] : []
    [RbConfig.ruby, DEPLOY, "--timeout", 120, *haproxy, *hosts]
  end

  def describe(records)
    records.first(10).map { |r| "#{r.kind} #{r.status} #{r.error}" }.join("\n") +
      "\nhost errors:\n#{@topology.host_errors}"
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
