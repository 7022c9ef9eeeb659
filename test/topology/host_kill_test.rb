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
#   again: it fails if it was on a connection to the dead host, in flight or
#   sent on a kept-alive connection before the balancer read that the host
#   had closed it. Each connection the balancer held to the host fails at
#   most one request; so failed POSTs are at most those connections, and
#   none fails once the balancer has closed them all.
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
    held, kill_start, kill_end, closed = kill_watching_connections(lb)
    wait_for_more(load, load.count, "the load going on after the kill")
    records = load.stop
    assert_bound(records, "#{lb}, h2 killed (#{((kill_end - kill_start) * 1000).round} ms to die)", held.size, kill_start, closed)
  end

  # Kills h2 while a thread reads the balancer's connections to it, from
  # just before the kill until the balancer has closed them all: every
  # connection on which a request could meet the dead host (processes take
  # milliseconds to die, and a connection opened meanwhile counts too).
  # Returns [the connections seen, kill start, kill end, when none was left].
  def kill_watching_connections(lb)
    seen = @topology.lb_connections_to(:h2)
    watching = true
    watcher = Thread.new do
      while watching
        seen |= @topology.lb_connections_to(:h2)
        sleep 0.0005
      end
    end
    kill_start, kill_end = @topology.kill_host(:h2)
    closed = wait_until("#{lb} closing its connections to the dead host", interval: 0.005) do
      @topology.lb_connections_to(:h2).empty? && now
    end
    watching = false
    watcher.join
    [seen, kill_start, kill_end, closed]
  end

  def assert_bound(records, what, held, kill_start, closed)
    failed = records.reject(&:ok)
    report = "#{what}: #{failed.size} failed of #{records.size} requests; the balancer held #{held} " \
             "connections to it and closed the last #{((closed - kill_start) * 1000).round} ms after the kill\n" +
             failed.map { |r| format("%s %d %+.3f..%+.3f s %s", r.kind, r.status, r.start - kill_start, r.finish - kill_start, r.error) }.join("\n")
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
