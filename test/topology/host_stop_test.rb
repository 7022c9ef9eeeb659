# frozen_string_literal: true

require_relative "../support/topology_case"

# Issue 15: a host stopped for good (TERM, as when a machine is taken out of
# service) under continuous load fails no request, through HAProxy and
# through nginx, with --health-path and --drain-delay (docs/DRAINING.md):
# during the delay the health path answers 503, so HAProxy's checks
# (every 500 ms, fall 2) take the host out before it refuses anything, and
# every response closes its connection, so no balancer holds a kept-alive
# connection that the drain could close under a request; nginx, which never
# reads the health path, meets refused connections after the delay and
# retries them on another host whatever the method.
class HostStopTest < TopologyCase
  # HAProxy's inter × fall plus one interval (docs/DRAINING.md's arithmetic).
  DRAIN_DELAY = 2

  def test_host_stopped_with_drain_delay_through_haproxy_fails_no_request
    host_stopped(:haproxy)
  end

  def test_host_stopped_with_drain_delay_through_nginx_fails_no_request
    host_stopped(:nginx)
  end

  private

  def host_stopped(lb)
    start(lb, "--drain-delay", DRAIN_DELAY)
    load = start_load
    h2 = @topology.processes.find("h2")
    stop_at = now
    Process.kill(:TERM, h2.pid) # the master alone: it times the delay for its workers
    assert h2.wait(60), "h2 did not stop:\n#{h2.log_tail}"
    assert h2.status.success?, "h2 stopped with #{h2.status.inspect}:\n#{h2.log_tail}"
    stopped_at = now
    wait_for_more(load, load.count, "the load going on after h2 stopped")
    records = load.stop
    failed = records.reject(&:ok)
    assert_empty failed, "#{failed.size} of #{records.size} requests failed through #{lb}:\n#{describe(failed)}"
    assert records.any? { |r| r.host == "h2" && r.start > stop_at }, "h2 served during its drain delay"
    refute records.any? { |r| r.host == "h2" && r.start > stopped_at }, "h2 served after it exited"
  end
end
