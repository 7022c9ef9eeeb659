# frozen_string_literal: true

require_relative "../support/cluster_helpers"

# Cluster mode with real processes and signals. Assertions are on counts and
# states, never on timings; every wait has a deadline.
class ClusterTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")

  def test_stats_report_memory_for_every_worker
    start_cluster(APP, workers: 3)
    wait_until("3 workers serving") { serving_workers.size == 3 }
    report = stats
    report["workers"].each do |worker|
      assert_operator worker["memory"]["pss"], :>, 0, "worker #{worker['index']} has no PSS"
      assert_operator worker["memory"]["uss"], :>, 0
    end
    assert_equal report["workers"].sum { |w| w["memory"]["pss"] }, report["totals"]["pss"] - report["mold"].to_h.fetch("memory", {}).fetch("pss", 0)
    assert_equal "2", report["master"]["malloc_arena_max"]
  end

  def test_phased_restart_under_load_fails_no_request
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    before = serving_workers.map { |w| w["pid"] }
    load = Load.new(app)
    Process.kill(:USR1, app.pid)
    wait_until("every worker replaced") { (serving_workers.map { |w| w["pid"] } & before).empty? && serving_workers.size == 2 }
    wait_until("some requests served by the new workers") { load.ok > 50 }
    load.stop
    assert_empty load.failures, "failed requests during a phased restart"
  end

  # HUP reopens the log files in the master, which forwards it to every
  # worker; no worker is replaced. Untrapped, it ended the master with no
  # log line; then it was logged and ignored. (LoggingClusterTest moves the
  # files away and follows the new lines.)
  def test_hup_reopens_the_logs_of_master_and_workers
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    before = serving_workers.map { |w| w["pid"] }
    Process.kill(:HUP, app.pid)
    wait_until("master and workers reopened") { app.output.scan("HUP: log files reopened").size == 3 }
    assert_equal 200, ClusterHelpers.get(app, "/").status
    assert_equal before.sort, serving_workers.map { |w| w["pid"] }.sort, "no worker was replaced"
    assert app.alive?
  end

  def test_killed_worker_is_replaced
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    victim = serving_workers.first["pid"]
    Process.kill(:KILL, victim)
    wait_until("a replacement serving") do
      pids = serving_workers.map { |w| w["pid"] }
      pids.size == 2 && !pids.include?(victim)
    end
    assert_equal 200, ClusterHelpers.get(app, "/").status
  end

  def test_a_request_that_hangs_gets_its_worker_replaced
    app = start_cluster("--worker-timeout", "1", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    stuck = serving_workers.first["pid"]
    hanging = app.connect
    hanging.write(HttpClient.request("GET", "/hang"))
    wait_until("the stuck worker replaced") do
      pids = serving_workers.map { |w| w["pid"] }
      pids.size == 1 && pids.first != stuck
    end
    assert_equal 200, ClusterHelpers.get(app, "/").status
    assert_equal 1, app.output.scan(/is stuck.*killing it/).size, "one kill, one log line:\n#{app.output}"
  ensure
    hanging&.close
  end

  # Issue 65, item 13: a worker killed for being stuck said nothing of why.
  # Now it is asked first (URG) and logs every thread's backtrace and its
  # requests in flight (method, path without the query, request id, age),
  # then the KILL follows.
  def test_a_stuck_worker_logs_its_threads_and_requests_before_the_kill
    app = start_cluster("--worker-timeout", "1", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    stuck = serving_workers.first["pid"]
    hanging = app.connect
    hanging.write(HttpClient.request("GET", "/hang?token=s3cret", [["X-Request-Id", "req-42"]]))
    removed = app.wait_for_output(/worker 0 removed \(pid #{stuck}, killed by signal KILL\)/, deadline: DEADLINE)
    assert removed, app.output
    dump = ClusterHelpers.log_of(app, stuck)
    assert_match(/thread dump: \d+ thread\(s\), 1 request\(s\) in flight: GET \/hang \(request id req-42, \d+\.\ds\)/, dump)
    assert_match(%r{cluster\.ru:\d+:in .*sleep}, dump, "the frame the request hangs in")
    refute_match(/s3cret/, app.output, "no query string values in the log")
    assert_operator app.output.index("thread dump:"), :<, removed.begin(0), "the dump comes before the KILL"
  ensure
    hanging&.close
  end

  # Issue 65, item 16: at one worker, remove-worker (TTOU) answered ok and did nothing.
  def test_remove_worker_at_one_worker_is_refused_with_the_reason
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    why = "remove-worker ignored: 1 worker is the fewest a cluster runs (stop the cluster to run none)"
    assert_equal({ "error" => why }, control("remove-worker"))
    Process.kill(:TTOU, app.pid)
    wait_until("the TTOU refusal logged") { app.output.scan(why).size == 2 }
    assert_equal 1, serving_workers.size
    assert_equal 1, stats["master"]["workers_desired"]
  end

  # Issue 11, item 8: every worker (and so the mold and its workers) held the
  # master's control listener.
  def test_no_worker_or_mold_holds_the_control_listener
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    10.times { ClusterHelpers.get(app, "/") }
    control("refork")
    report = wait_until("generation 1 serving") do
      s = stats
      s if s["workers"].count { |w| w["state"] == "serving" && w["generation"] == 1 } == 2
    end
    listener = listening_inode(@control)
    assert listener, "the control socket is listed in /proc/net/unix"
    assert_includes socket_inodes(app.pid), listener, "the master holds it"
    (report["workers"].map { |w| w["pid"] } << report["mold"]["pid"]).each do |pid|
      refute_includes socket_inodes(pid), listener, "process #{pid} holds the control listener"
    end
  end

  def test_term_lets_in_flight_requests_finish
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    point = rendezvous
    client = app.connect
    client.write(HttpClient.request("GET", "/gate?path=#{point.path}"))
    visit = point.await("entered")
    Process.kill(:TERM, app.pid)
    app.wait_for_output(/stopping/)
    visit.release
    assert_equal 200, client.read_response.status
    assert app.wait_for_exit.success?
  end

  def test_refork_starts_a_new_generation_from_a_mold
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    old = serving_workers.map { |w| w["pid"] }
    20.times { ClusterHelpers.get(app, "/") }
    assert_equal({ "ok" => "refork" }, control("refork"))
    report = wait_until("generation 1 serving") do
      s = stats
      s if s["workers"].count { |w| w["state"] == "serving" && w["generation"] == 1 } == 2
    end
    assert_equal "mold", report["mold"]["state"]
    assert_includes old, report["mold"]["pid"], "the mold is a former worker"
    (old - [report["mold"]["pid"]]).each do |pid|
      wait_until("old worker #{pid} gone") { !alive?(pid) }
    end
    _, body = get_json(app, "/")
    assert_includes report["workers"].map { |w| w["pid"] }, body["pid"]
  end

  def test_refork_after_a_request_count
    app = start_cluster("--refork-after", "30", APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    80.times { ClusterHelpers.get(app, "/") }
    wait_until("automatic refork to generation 1") { stats["master"]["generation"] == 1 }
  end

  def test_ttin_and_ttou_change_the_worker_count
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker") { serving_workers.size == 1 }
    Process.kill(:TTIN, app.pid)
    wait_until("2 workers") { serving_workers.size == 2 }
    Process.kill(:TTOU, app.pid)
    wait_until("back to 1 worker") { stats["workers"].size == 1 }
  end

  def test_no_class_is_created_per_request
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker") { serving_workers.size == 1 }
    200.times { ClusterHelpers.get(app, "/") } # warm-up
    _, before = get_json(app, "/")
    skip "RubyVM.stat has no class_serial on Ruby #{RUBY_VERSION} (gone since 3.2)" unless before["class_serial"]
    2000.times { ClusterHelpers.get(app, "/") }
    _, after = get_json(app, "/")
    assert_equal before["pid"], after["pid"]
    assert_equal before["class_serial"], after["class_serial"], "classes were created while serving requests"
  end

  private

  def alive?(pid)
    Process.kill(0, pid)
    true
  rescue Errno::ESRCH
    false
  end
end

# USR2: a new master from the same command line takes over the listening
# sockets; the old one drains and exits. Clients never see a refused or failed
# request.
class HotRestartTest < SpindleIntegrationTest
  include ClusterHelpers

  def test_hot_restart_under_load_fails_no_request
    app = start_cluster(app_path("cluster"), workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    old_master = stats["master"]["pid"]
    load = Load.new(app)
    Process.kill(:USR2, app.pid)
    # Not wait_for_exit: the new master inherited the old one's output pipes,
    # so they stay open; the exit status is what tells.
    wait_until("the old master exits") { !app.alive? }
    assert app.status.success?, "the old master drains and exits cleanly"
    report = wait_until("the new master serving") do
      s = stats
      s if s["master"]["pid"] != old_master && s["workers"].count { |w| w["state"] == "serving" } == 2
    end
    served = load.ok
    wait_until("the new master answering the load") { load.ok > served + 50 }
    load.stop
    assert_empty load.failures, "failed requests during a hot restart"
    _, body = get_json(app, "/")
    assert_includes report["workers"].map { |w| w["pid"] }, body["pid"]
  ensure
    Process.kill(:TERM, report["master"]["pid"]) if report
  end
end
