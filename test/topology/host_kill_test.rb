# frozen_string_literal: true

require_relative "../support/topology_case"

# Issue 15: one of three hosts dies (`kill -9` of every process in its
# namespace at once, master and workers: a machine that stops) under
# continuous load through the load balancer. What docs/deploy/'s settings
# promise (docs/deploy/README.md, "When a host dies"):
# - no GET fails: a GET the dead host never answered is retried on another
#   host (nginx proxy_next_upstream error; HAProxy retry-on conn-failure
#   empty-response), and connections to it are refused, so retried, until it
#   leaves the pool (nginx max_fails, HAProxy's health check);
# - a POST may have run before the host died, so neither balancer sends it
#   again: it fails if it was on a connection to the dead host, in flight,
#   sent on a kept-alive connection before the balancer read that the host
#   had closed it, or sent on a connection the host's kernel accepted into
#   the listen backlog while its processes were dying. Each connection fails
#   at most one request (the balancer closes it then); so failed POSTs are
#   at most the connections the host had from the balancer when the kill
#   began plus those its kernel accepted after (counted by the kernel:
#   PassiveOpens), and none fails once the balancer has closed them all.
class HostKillTest < TopologyCase
  def test_host_killed_through_nginx_fails_at_most_one_post_per_connection
    host_killed(:nginx)
  end

  def test_host_killed_through_haproxy_fails_at_most_one_post_per_connection
    host_killed(:haproxy)
  end

  private

  def host_killed(lb)
    start(lb)
    load = start_load
    before = @topology.host_tcp(:h2)
    kill_start, kill_end = @topology.kill_host(:h2)
    closed = wait_until("#{lb} closing its connections to the dead host", interval: 0.005) do
      @topology.lb_connections_to(:h2).empty? && now
    end
    held = before[:open] + @topology.host_tcp(:h2)[:passive_opens] - before[:passive_opens]
    wait_for_more(load, load.count, "the load going on after the kill")
    records = load.stop
    assert_bound(records, "#{lb}, h2 killed (#{((kill_end - kill_start) * 1000).round} ms to die)", held, kill_start, closed)
  end

  def assert_bound(records, what, held, kill_start, closed)
    failed = records.reject(&:ok)
    report = "#{what}: #{failed.size} failed of #{records.size} requests; #{held} connections from the balancer " \
             "to it were open at the kill or opened after; the balancer closed the last #{((closed - kill_start) * 1000).round} ms after the kill\n" +
             failed.map { |r| format("%s %d %+.3f..%+.3f s %s", r.kind, r.status, r.start - kill_start, r.finish - kill_start, r.error) }.join("\n") +
             "\nhost errors:\n#{@topology.host_errors}"
    assert_empty failed.reject(&:post?), "GETs failed (#{report})"
    assert_operator failed.size, :<=, held, "more POSTs failed than connections to the dead host (#{report})"
    late = failed.select { |r| r.start > closed }
    assert_empty late, "requests failed after the balancer had closed every connection to the dead host (#{report})"
    %w[h1 h3].each do |host|
      assert records.any? { |r| r.start > closed && r.host == host }, "#{host} served after the kill (#{report})"
    end
    puts "\n#{report}" if ENV["SPINDLE_TOPOLOGY_VERBOSE"]
  end
end
