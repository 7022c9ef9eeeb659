# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/metrics_scraper"

# --metrics in a process serving alone: a thread of the process serves the
# exposition, with the names a cluster uses and the process as worker "0".
# Scraped over a real socket and checked with Debian's promtool.
class SingleProcessMetricsTest < SpindleIntegrationTest
  include MetricsScraper

  APP = app_path("cluster")
  METRICS = ["--metrics", "tcp://127.0.0.1:0"].freeze
  ENGINES = %w[blocking threads fibers hybrid].freeze

  def test_promtool_accepts_the_exposition_and_the_counts_follow_the_requests
    process = spawn_server("-b", LOOPBACK, *METRICS, APP)
    before = scrape(process)
    assert_promtool_accepts before
    assert_equal 0, before["spindle_requests_total", worker: 0]

    5.times { assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status }
    after = scrape(process)
    assert_promtool_accepts after
    assert_equal 5, after["spindle_requests_total", worker: 0]
    assert_equal 5, after["spindle_request_duration_seconds_count", worker: 0], "one observation per request"
    assert_equal 5, after["spindle_request_duration_seconds_bucket", worker: 0, le: "+Inf"]
    assert_operator after["spindle_worker_rss_bytes", worker: 0], :>, 0
    assert_equal 0, after["spindle_worker_restarts_total", worker: 0]
    assert_nil after["spindle_workers_desired"], "no master, no master families"
  end

  # The app holds every thread (and, on the fiber engines, the request's
  # fiber); the scrape is served all the same, and sees the request in flight.
  ENGINES.each do |engine|
    define_method(:"test_the_endpoint_answers_while_the_app_is_busy_on_#{engine}") do
      process = spawn_server("-b", LOOPBACK, "--engine", engine, "-t", "1:1", *METRICS, APP)
      gate = rendezvous
      held = connect(process)
      held.write(request("GET", "/gate?path=#{gate.path}", [["Connection", "close"]]))
      visit = gate.await("entered")

      busy = scrape(process)
      assert_promtool_accepts busy
      assert_equal 1, busy["spindle_requests_in_flight", worker: 0]
      assert_equal 0, busy["spindle_requests_total", worker: 0]

      visit.release
      assert_equal 200, held.read_response.status
      wait_until("the request counted") { scrape(process)["spindle_requests_total", worker: 0] == 1 }
    end
  end

  # USR2 alone: the successor waits for the address, which the old process
  # lets go when it drains, and then serves the metrics itself.
  def test_after_usr2_the_successor_serves_the_metrics
    port = free_port
    process = spawn_server("-b", LOOPBACK, "--metrics", "tcp://127.0.0.1:#{port}", APP)
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    assert_equal 1, scrape(process)["spindle_requests_total", worker: 0]
    process.signal(:USR2)
    assert process.wait_for_output(/told the previous process \(pid #{process.pid}\) to drain/), process.output
    # Not wait_for_exit: the successor inherited the output pipes, so they stay open.
    wait_until("the old process exits") { !process.alive? }
    after = wait_until("the successor serves the metrics") { scrape_if_up("127.0.0.1", port) }
    assert_promtool_accepts after
    assert_equal 0, after["spindle_requests_total", worker: 0], "a new process counts from zero"
  end

  def test_a_metrics_endpoint_on_the_apps_port_is_one_clear_line
    app = TCPServer.new("127.0.0.1", 0)
    uri = "tcp://127.0.0.1:#{app.local_address.ip_port}"
    process = run_spindle("-b", LOOPBACK, "--metrics", uri, APP)
    assert_equal 2, process.status&.exitstatus, process.output
    assert_match(/^spindle: metrics endpoint #{Regexp.escape(uri)}: address already in use$/, process.output)
  ensure
    app&.close
  end
end
