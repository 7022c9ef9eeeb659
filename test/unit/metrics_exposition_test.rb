# frozen_string_literal: true

require "test_helper"
require "open3"
require "spindle/request/request_tracker"
require "spindle/metrics/report"

# The request-duration histogram (counted per request, so it must cost no
# allocation), and the text a scrape gets, checked by Prometheus's own
# promtool (Debian's prometheus package, which bin/test installs).
class MetricsExpositionTest < Minitest::Test
  Histogram = Spindle::Metrics::DurationHistogram
  Report = Spindle::Metrics::Report
  PROMTOOL = "/usr/bin/promtool"

  def test_a_duration_on_a_bound_counts_in_that_bound
    histogram = Histogram.new
    [0.005, 0.0051, 10.0, 10.5, 0.0].each { |seconds| histogram.observe(seconds) }
    cumulative = histogram.snapshot.cumulative.to_h
    assert_equal 2, cumulative[0.005], "le is less than or equal"
    assert_equal 3, cumulative[0.01]
    assert_equal 4, cumulative[10.0]
    assert_equal 5, cumulative[Float::INFINITY]
    assert_in_delta 20.5101, histogram.snapshot.sum, 1e-9
    assert_equal 5, histogram.snapshot.count
  end

  # docs/PERFORMANCE.md counts objects per request; the tracker is on that
  # path, once at the start and once at the end of each request.
  def test_tracking_a_request_allocates_nothing
    tracker = Spindle::RequestTracker.new
    conn = Object.new
    100.times { track(tracker, conn) } # the Hash's table reaches its size
    before = GC.stat(:total_allocated_objects)
    1000.times { track(tracker, conn) }
    allocated = GC.stat(:total_allocated_objects) - before
    assert_operator allocated, :<, 10, "#{allocated} objects over 1,000 requests: one per request would be 1,000"
    assert_equal 1100, tracker.durations.count
    assert_equal 1100, tracker.served
  end

  def test_a_snapshot_is_a_copy
    histogram = Histogram.new
    snapshot = histogram.snapshot
    histogram.observe(1)
    assert_equal 0, snapshot.count
    assert_equal 1, histogram.snapshot.count
  end

  def test_a_cluster_report_passes_promtool
    text = Report.new(cluster_stats).to_s
    assert_promtool_accepts text
    assert_includes text, %(spindle_workers{state="serving"} 2\n)
    assert_includes text, %(spindle_requests_total{worker="1"} 7\n)
    assert_includes text, %(spindle_request_duration_seconds_bucket{worker="0",le="0.005"} 1\n)
    assert_includes text, %(spindle_request_duration_seconds_bucket{worker="0",le="+Inf"} 3\n)
    assert_includes text, %(spindle_request_duration_seconds_count{worker="0"} 3\n)
    assert_includes text, %(spindle_worker_gc_runs_total{worker="0",kind="major"} 2\n)
    assert_includes text, %(spindle_mold_pss_bytes 4096\n)
  end

  def test_a_single_process_report_has_no_master_families
    text = Report.new("workers" => [worker(0)]).to_s
    assert_promtool_accepts text
    refute_match(/^spindle_(workers|master|mold|generation)/, text)
    assert_includes text, %(spindle_requests_total{worker="0"} 3\n)
  end

  # A booting worker has not checked in: what it does not know is left out,
  # and its histogram is all zeros, so the series exist from the start.
  def test_a_worker_that_has_not_checked_in
    booting = { "index" => 0, "pid" => nil, "state" => "booting", "generation" => 0, "requests" => 0,
                "in_flight" => 0, "backlog" => 0, "memory" => nil, "gc" => nil, "restarts" => 1, "durations" => nil }
    text = Report.new("workers" => [booting]).to_s
    assert_promtool_accepts text
    refute_match(/spindle_worker_rss_bytes|spindle_worker_gc_runs_total/, text)
    assert_includes text, %(spindle_request_duration_seconds_count{worker="0"} 0\n)
    assert_includes text, %(spindle_worker_restarts_total{worker="0"} 1\n)
  end

  # A replacement and the worker it replaces share a slot for a moment;
  # two samples with the same labels would make Prometheus drop the scrape.
  def test_one_series_per_slot_while_a_worker_is_replaced
    stats = cluster_stats
    stats["workers"] << worker(0).merge("pid" => 99, "state" => "retiring", "requests" => 500)
    text = Report.new(stats).to_s
    assert_promtool_accepts text
    assert_equal 1, text.scan(/^spindle_requests_total\{worker="0"\}/).size
    assert_includes text, %(spindle_requests_total{worker="0"} 3\n), "the serving replacement, not the retiring one"
    assert_includes text, %(spindle_workers{state="retiring"} 1\n)
  end

  def test_label_values_and_help_are_escaped
    out = Spindle::Metrics::Exposition.new
    out.family("x_total", "counter", "a \\ b\nc", [[{ "v" => %(a"b\\c\nd) }, 1]])
    assert_equal %(# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\nx_total{v="a\\"b\\\\c\\nd"} 1\n), out.to_s
    assert_promtool_accepts out.to_s
  end

  private

  def track(tracker, conn)
    tracker.start(conn)
    tracker.finish(conn)
  end

  def assert_promtool_accepts(text)
    skip "promtool is not installed (Debian's prometheus package; bin/test installs it)" unless File.executable?(PROMTOOL)
    out, status = Open3.capture2e(PROMTOOL, "check", "metrics", stdin_data: text)
    assert status.success?, "promtool check metrics refused it:\n#{out}\n#{text}"
    assert_empty out.strip, "promtool's lint found problems:\n#{out}"
  end

  def worker(index, requests: 3)
    histogram = Histogram.new
    [0.001, 0.2, 3.0].each { |s| histogram.observe(s) }
    { "index" => index, "pid" => 100 + index, "state" => "serving", "generation" => 0,
      "booted_at" => "2026-01-02T03:04:05Z", "requests" => requests, "in_flight" => 1, "backlog" => 0,
      "last_checkin_age" => 0.5, "oldest_request_age" => 0.25,
      "memory" => { rss: 3 * 4096, pss: 2 * 4096, uss: 4096 },
      "gc" => { count: 5, major: 2, minor: 3, heap_live_slots: 1000 }, "restarts" => 0,
      "durations" => histogram.snapshot }
  end

  def cluster_stats
    { "master" => { "pid" => 1, "started_at" => "2026-01-02T03:04:00Z", "generation" => 0, "workers_desired" => 2,
                    "memory" => { rss: 8192, pss: 4096, uss: 4096 } },
      "workers" => [worker(0), worker(1, requests: 7)],
      "mold" => { "state" => "mold", "memory" => { rss: 8192, pss: 4096, uss: 4096 } } }
  end
end
