# frozen_string_literal: true

require_relative "../support/topology_case"

# Issue 15: a rolling deploy across three hosts under continuous load through
# the load balancer fails no request, through nginx and through HAProxy, with
# the configs of docs/deploy/ and bin/spindle-rolling-deploy. The load mixes
# keep-alive and Connection: close clients, GET and POST with bodies; the
# new code is observable (the app reports the version it loaded).
class RollingDeployTest < TopologyCase
  def test_rolling_deploy_through_nginx_fails_no_request
    rolling_deploy(:nginx)
  end

  def test_rolling_deploy_through_haproxy_fails_no_request
    rolling_deploy(:haproxy)
  end

  private

  def rolling_deploy(lb)
    start(lb)
    load = start_load
    File.write(@version, "v2\n")
    deploy_start = now
    out, err, status = @topology.run(:lb, *deploy_args(lb), "--expect-version", "v2", timeout: 600)
    deploy_end = now
    assert status.success?, "the rolling deploy failed (#{status.inspect}):\n#{out}#{err}"
    # The script is done once the new code serves; an old master may still
    # finish requests on connections it had (with connection: close).
    old_gone = wait_until("every old master (the ones the test started) exits") do
      @topology.hosts.none? { |h| @topology.processes.find(h).alive? } && now
    end
    wait_for_more(load, load.count, "the load going on after the deploy")
    records = load.stop

    failed = records.reject(&:ok)
    assert_empty failed, "#{failed.size} of #{records.size} requests failed through #{lb}:\n#{describe(failed)}"
    during = records.select { |r| r.start >= deploy_start && r.finish <= deploy_end }
    %w[keepalive-get keepalive-post close-get close-post].each do |kind|
      assert during.any? { |r| r.kind == kind }, "no #{kind} request ran during the deploy"
    end
    assert_new_code_everywhere(records, old_gone)
  end

  # Once the old masters are gone, every host answers v2; v1 was seen
  # before: the deploy changed the code, host by host.
  def assert_new_code_everywhere(records, old_gone)
    assert records.any? { |r| r.version == "v1" }, "no request answered by the old code"
    last = records.select { |r| r.start > old_gone }
    assert_equal ["v2"], last.map(&:version).uniq, "requests after the old masters exited answered by old code"
    assert_equal %w[h1 h2 h3], last.map(&:host).uniq.sort, "not every host served the new code"
  end
end

# A release whose app fails to load: the first host's hot restart fails (its
# old master keeps serving), the script puts it back into the pool and stops
# with exit 1, and the other hosts are never touched. Nothing fails meanwhile.
class FailedRollingDeployTest < TopologyCase
  def test_a_release_that_fails_to_load_stops_the_deploy_at_the_first_host
    start(:haproxy)
    load = start_load
    File.write(@version, "broken\n")
    out, err, status = @topology.run(:lb, *deploy_args(:haproxy).map { |a| a == 120 ? 15 : a }, "--expect-version", "broken",
                                     timeout: 300)
    refute status.success?, "the deploy went on:\n#{out}#{err}"
    assert_match(/stopped: h1: .*not within 15/, err)
    refute_match(/h2:/, err, "the deploy went past the failed host")
    assert_match(/spindle,h1,.*,UP,/, @topology.haproxy_command("show stat"), "h1 back in the pool")
    wait_for_more(load, load.count, "the load going on after the failed deploy")
    records = load.stop
    failed = records.reject(&:ok)
    assert_empty failed, "requests failed during the failed deploy:\n#{describe(failed)}"
    assert_equal ["v1"], records.map(&:version).uniq, "every request answered by the old code"
  end
end
