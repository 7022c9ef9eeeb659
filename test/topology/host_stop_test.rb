# frozen_string_literal: true

require_relative "../support/topology_case"

# Issue 15: a host stopped for good (TERM to its master, as when a machine is
# taken out of service) under continuous load, with --health-path and
# --drain-delay (docs/DRAINING.md).
#
# Through HAProxy no request fails: during the delay the health path answers
# 503, so HAProxy's checks (every 500 ms, fall 2) take the host out before it
# refuses anything, and every response closes its connection, so no kept-alive
# connection is left for the drain to close under a request.
#
# nginx (open source) never reads the health path and keeps sending the host
# new connections until its listener stops, when the drain begins: no GET
# fails (nginx retries them, and those refused from then on), but a POST sent
# on a connection the host's kernel had accepted into the listen backlog by
# then is reset as the listener stops, and nginx does not
# resend a POST. So through nginx only POSTs fail, only while the host stops;
# docs/deploy/README.md says how to take a host out of nginx's pool first.
class HostStopTest < TopologyCase
  # HAProxy's inter × fall plus one interval (docs/DRAINING.md's arithmetic).
  DRAIN_DELAY = 2

  def test_host_stopped_with_drain_delay_through_haproxy_fails_no_request
    records, stop_at, stopped_at = stop_h2(:haproxy)
    failed = records.reject(&:ok)
    assert_empty failed, "#{failed.size} of #{records.size} requests failed through HAProxy:\n#{describe(failed)}"
    assert_h2_served_until_it_stopped(records, stop_at, stopped_at)
  end

  def test_host_stopped_with_drain_delay_through_nginx_fails_only_posts_while_it_stops
    records, stop_at, stopped_at = stop_h2(:nginx)
    failed = records.reject(&:ok)
    assert_empty failed.reject(&:post?), "GETs failed through nginx:\n#{describe(failed.reject(&:post?))}"
    outside = failed.reject { |r| r.start >= stop_at && r.finish <= stopped_at }
    assert_empty outside, "POSTs failed outside h2's stop:\n#{describe(outside)}"
    assert_h2_served_until_it_stopped(records, stop_at, stopped_at)
    puts "\nnginx, h2 stopped: #{failed.size} POSTs failed of #{records.size} requests" if ENV["SPINDLE_TOPOLOGY_VERBOSE"]
  end

  private

  # [records, when TERM was sent, when h2 had exited]
  def stop_h2(lb)
    start(lb, "--drain-delay", DRAIN_DELAY)
    load = start_load
    h2 = @topology.processes.find("h2")
    stop_at = now
    Process.kill(:TERM, h2.pid) # the master alone: it times the delay for its workers
    assert h2.wait(60), "h2 did not stop:\n#{h2.log_tail}"
    assert h2.status.success?, "h2 stopped with #{h2.status.inspect}:\n#{h2.log_tail}"
    stopped_at = now
    wait_for_more(load, load.count, "the load going on after h2 stopped")
    [load.stop, stop_at, stopped_at]
  end

  def assert_h2_served_until_it_stopped(records, stop_at, stopped_at)
    assert records.any? { |r| r.host == "h2" && r.start > stop_at }, "h2 served during its drain delay"
    refute records.any? { |r| r.host == "h2" && r.start > stopped_at }, "h2 served after it exited"
  end
end
