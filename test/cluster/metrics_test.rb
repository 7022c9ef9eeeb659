# frozen_string_literal: true

require_relative "../support/cluster_helpers"
require_relative "../support/metrics_scraper"

# --metrics in a cluster: the master serves the exposition (never a worker),
# from the workers' check-ins, so a count shows up within a heartbeat; the
# tests wait for it. Scraped over a real socket and checked with promtool.
class ClusterMetricsTest < SpindleIntegrationTest
  include ClusterHelpers
  include MetricsScraper

  APP = app_path("cluster")
  METRICS = ["--metrics", "tcp://127.0.0.1:0"].freeze

  def test_promtool_accepts_the_exposition_after_real_requests_and_the_counters_grow
    app = start_cluster(*METRICS, APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    10.times { assert_equal 200, ClusterHelpers.get(app, "/").status }
    first = wait_until("10 requests counted") { (s = scrape(app)).sum("spindle_requests_total") == 10 && s }
    assert_promtool_accepts first
    assert_equal 10, first.sum("spindle_request_duration_seconds_count"), "one observation per request"
    assert_equal 10, first.sum("spindle_request_queue_time_seconds_count"), "and one queue time"
    assert_equal 0, first.sum("spindle_requests_shed_total")
    assert_equal 2, first["spindle_workers", state: "serving"]
    assert_equal 2, first["spindle_workers_desired"]
    [0, 1].each do |index|
      assert_operator first["spindle_worker_pss_bytes", worker: index], :>, 0
      assert_equal first["spindle_requests_total", worker: index],
                   first["spindle_request_duration_seconds_bucket", worker: index, le: "+Inf"]
    end

    5.times { assert_equal 200, ClusterHelpers.get(app, "/").status }
    second = wait_until("15 requests counted") { (s = scrape(app)).sum("spindle_requests_total") == 15 && s }
    assert_promtool_accepts second
    [0, 1].each do |index|
      assert_operator second["spindle_requests_total", worker: index], :>=, first["spindle_requests_total", worker: index]
    end
    assert_equal 15, second.sum("spindle_request_duration_seconds_count")
  end

  # A worker's sheds reach the master with its check-in. The request is
  # stamped 100 s ago by the (trusted) proxy: past --max-queue-time.
  def test_a_workers_shed_requests_are_counted
    app = start_cluster(*METRICS, "--trusted-proxies", "127.0.0.1/32", "--max-queue-time", "5", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    connection = connect(app)
    connection.write(request("GET", "/", [["X-Request-Start", "t=#{((Time.now.to_f - 100) * 1e6).to_i}"]]))
    assert_equal 503, connection.read_response.status
    shed = wait_until("the shed request counted") { (s = scrape(app))["spindle_requests_shed_total", worker: 0, reason: "queue_time"] == 1 && s }
    assert_promtool_accepts shed
    assert_operator shed["spindle_request_queue_time_seconds_sum", worker: 0], :>=, 100
  end

  def test_a_worker_restart_shows_in_restarts
    app = start_cluster(*METRICS, APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    victim = serving_workers.first
    assert_equal 0, scrape(app)["spindle_worker_restarts_total", worker: victim["index"]]

    Process.kill(:KILL, victim["pid"])
    replaced = wait_until("the worker replaced and counted") do
      s = scrape(app)
      s["spindle_workers", state: "serving"] == 2 && s["spindle_worker_restarts_total", worker: victim["index"]] == 1 && s
    end
    assert_promtool_accepts replaced
    other = 1 - victim["index"]
    assert_equal 0, replaced["spindle_worker_restarts_total", worker: other]
  end

  # USR2: the new master cannot have the address while the old one serves
  # on it; it takes it once the old one lets go, with no restart of its own.
  def test_after_a_hot_restart_the_new_master_serves_the_metrics
    port = free_port
    app = start_cluster("--metrics", "tcp://127.0.0.1:#{port}", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    assert scrape_if_up("127.0.0.1", port), "the first master serves the metrics"
    Process.kill(:USR2, app.pid)
    # The new master inherited the old one's output pipes: the exit status tells.
    wait_until("the old master exits") { !app.alive? }
    after = wait_until("the new master serves the metrics") { scrape_if_up("127.0.0.1", port) }
    assert_promtool_accepts after
    assert_equal 1, after["spindle_workers", state: "serving"]
    assert_equal 1, stats["workers"].count { |w| w["state"] == "serving" }
  end

  # Each worker runs one request at a time (the blocking engine accepts no
  # connection while its one thread is in the app) and both are held in the
  # app: the master still answers the scrape, and sees both in flight.
  def test_the_endpoint_answers_while_every_worker_is_busy
    app = start_cluster("--engine", "blocking", *METRICS, APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    gate = rendezvous
    visits = 2.times.map do # the second connection can only be taken by the worker not yet held
      connect(app).write(request("GET", "/gate?path=#{gate.path}", [["Connection", "close"]]))
      gate.await("entered")
    end

    busy = wait_until("both requests in flight") { (s = scrape(app)).sum("spindle_requests_in_flight") == 2 && s }
    assert_promtool_accepts busy
    assert_equal 2, busy["spindle_workers", state: "serving"]
  ensure
    visits&.each(&:release)
  end
end
