# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"
require_relative "../support/drain_helpers"
require_relative "../support/cluster_helpers"

# --health-path and --drain-delay, on every engine and in a cluster: the
# server answers the health path itself (200 while serving), and on a stop
# signal it first answers it with 503 while still accepting and serving the
# app for the drain delay, with every response saying connection: close;
# then it drains as before. A second signal during the delay stops at once.
class HealthPathTest < SpindleIntegrationTest
  include DrainHelpers
  include ClusterHelpers

  SERVINGS = {
    "blocking" => %w[--engine blocking],
    "threads" => %w[--engine threads -t 2:4],
    "fibers" => %w[--engine fibers],
    "hybrid" => %w[--engine hybrid --loops 2],
    "cluster" => %w[-w 2],
  }.freeze
  # Long enough that the tests below end it with a second signal, never by
  # waiting it out: no test depends on how long it is.
  LONG_DELAY = "600"

  SERVINGS.each do |label, flags|
    define_method("test_the_health_path_is_answered_without_the_app_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--health-path", "/healthz", app_path("all"))
      response = keep_alive_connection(process, "/healthz?probe-8c1d")
      assert_equal [200, "ok\n", "no-store"], [response.status, response.body, response["cache-control"]], response.to_s
      head = roundtrip(request("HEAD", "/healthz", [["Connection", "close"]]), process, head: true)
      assert_equal [200, ""], [head.status, head.body]
      # (The echo app would have answered JSON. all.ru's record of what it saw
      # is per process: a cluster's workers each keep their own.)
      refute app_saw?("probe-8c1d", process), "the app was called for the health path" unless label == "cluster"

      # Only GET and HEAD are the server's; the app keeps the path's other methods.
      posted = roundtrip(request("POST", "/healthz?post-8c1d", [["Connection", "close"]], body: "x"), process)
      assert_equal ["POST", "/healthz"], JSON.parse(posted.body).values_at("method", "path")
      assert_equal 200, get(process, "/healthz/deeper").status # another path: the app's (echo)
      assert app_saw?("/healthz/deeper", process) unless label == "cluster"
    end

    define_method("test_the_health_path_answers_503_during_the_drain_delay_while_the_app_serves_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--health-path", "/healthz", "--drain-delay", LONG_DELAY,
                             app_path("all"))
      idle = connect(process)
      keep_alive_connection(process, "/first", idle)
      process.signal(:TERM)
      assert process.wait_for_output(/drain delay/), process.output
      assert_leaving_the_pool(process, label)

      # Still accepting and serving the app, and asking clients to reconnect
      # (through the load balancer, which now picks another host).
      served = get(process, "/during-the-delay")
      assert_equal [200, "/during-the-delay"], [served.status, JSON.parse(served.body)["path"]], process.output
      assert served.close?, "a response during the drain delay should say connection: close:\n#{served}"
      idle.write(request("GET", "/on-a-kept-connection"))
      kept = idle.read_response
      assert_equal 200, kept.status
      assert kept.close?, "a kept-alive connection is closed after its response during the delay:\n#{kept}"
      refute_match(/\] INFO spindle: (draining|stopping \()/, process.output, "the drain must wait for the delay")

      process.signal(:TERM)
      status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
      assert status, "a second TERM during the drain delay should stop at once:\n#{process.output}"
      assert_equal 1, status.exitstatus, process.output
    end

    define_method("test_the_drain_delay_ends_in_the_drain_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--health-path", "/healthz", "--drain-delay", "1",
                             app_path("all"))
      process.signal(:QUIT)
      assert process.wait_for_output(/drain delay/), process.output
      status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
      assert_equal 0, status&.exitstatus, "the drain should follow the delay and end the process:\n#{process.output}"
      assert_operator process.output.index("drain delay"), :<, process.output.index("draining"), process.output
      refute_app_errors(process)
    end
  end

  # Without --drain-delay, a health path brings the default delay (10 s):
  # the stop begins with 503s, not with a closed listener.
  def test_a_health_path_without_a_drain_delay_gets_the_default_one
    process = spawn_server("-b", LOOPBACK, "--health-path", "/up", app_path("all"))
    process.signal(:TERM)
    assert process.wait_for_output(/drain delay: .* for 10\.0s/), process.output
    assert_equal 503, get(process, "/up").status
    assert_equal 200, get(process, "/hello").status
    process.stop(:TERM)
  end

  # Without a health path no load balancer can see the stop coming: TERM
  # drains at once, as it always did.
  def test_no_drain_delay_without_a_health_path
    process = spawn_server("-b", LOOPBACK, app_path("all"))
    process.signal(:TERM)
    assert_equal 0, process.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, process.output
    refute_match(/drain delay/, process.output)
  end

  # A worker that dies during the master's drain delay is replaced, and its
  # replacement is told at boot: it serves, and answers the health path 503.
  def test_a_worker_booted_during_the_drain_delay_leaves_the_pool_too
    process = start_cluster("--health-path", "/healthz", "--drain-delay", LONG_DELAY, app_path("all"), workers: 1)
    old = wait_until("1 worker serving") { serving_workers.first&.fetch("pid") }
    process.signal(:TERM)
    assert process.wait_for_output(/drain delay/), process.output
    Process.kill(:KILL, old)
    wait_until("a replacement serving") { serving_workers.map { |w| w["pid"] } - [old] != [] }
    # The replacement reads the master's word on its channel as it starts
    # serving: 503 from then on (never, without it).
    wait_until("the replacement answers the health path with 503") { get(process, "/healthz").status == 503 }
    assert_equal 200, get(process, "/served").status
  end

  # A USR2 handover is no stop: the successor answers on the same sockets,
  # so the old process (or master) drains at once, without the delay, and
  # the health path never says 503 to a new connection.
  {
    "single" => [],
    "cluster" => %w[-w 1],
  }.each do |label, flags|
    define_method("test_a_usr2_handover_skips_the_drain_delay_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--health-path", "/healthz", "--drain-delay", LONG_DELAY,
                             app_path("restartable"))
      process.signal(:USR2)
      # Not wait_for_exit: the successor inherited the output pipes.
      wait_until("the old process exits", deadline: SpindleProcess::STOP_DEADLINE) { !process.alive? }
      assert_equal 0, process.status.exitstatus, process.output
      refute_match(/drain delay/, process.output)
      assert_equal 200, get(process, "/healthz").status, process.output
    end
  end

  def test_bad_health_paths_are_refused_at_start
    ["healthz", "/a b", "/up?x=1", ""].each do |path|
      process = run_spindle("-b", LOOPBACK, "--health-path", path, app_path("all"))
      refute_equal 0, process.status&.exitstatus, "--health-path #{path.inspect} was accepted:\n#{process.output}"
      assert_match(/health_path must be an absolute path/, process.output)
    end
    process = run_spindle("-b", LOOPBACK, "--drain-delay", "-1", app_path("all"))
    assert_match(/drain_delay must be a number of seconds/, process.output)
  end

  private

  def get(process, path)
    roundtrip(request("GET", path, [["Connection", "close"]]), process)
  end

  # A request on a connection left open: a serving server keeps it.
  def keep_alive_connection(process, path, connection = connect(process))
    connection.write(request("GET", path))
    response = connection.read_response
    assert_equal 200, response.status
    refute response.close?, "a serving server should keep the connection:\n#{response}"
    response
  end

  # A single process is leaving the pool once it has logged so. A cluster's
  # master logs first and tells its workers over their channels: each says
  # 503 once it has read that, so the check is every one of a run of fresh
  # connections (spread over the workers by the kernel) answering 503.
  def assert_leaving_the_pool(process, label)
    if label == "cluster"
      wait_until("every worker answers the health path with 503") do
        Array.new(8) { get(process, "/healthz").status }.uniq == [503]
      end
    end
    response = get(process, "/healthz")
    assert_equal [503, "stopping\n"], [response.status, response.body], process.output
    assert response.close?, response.to_s
  end
end
