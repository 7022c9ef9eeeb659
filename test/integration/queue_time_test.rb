# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"
require_relative "../support/metrics_scraper"

# Queue time and --max-queue-time (docs/QUEUE_TIME.md), on every engine:
# the wait before the app call reaches the env, the access log and the
# metrics; a trusted proxy's X-Request-Start counts, anyone else's does not;
# a request that waited past --max-queue-time behind a held one is answered
# 503 without the app, and a health check never is.
#
# The waits are made, not hoped for: a request stamped by the (trusted)
# proxy goes out while the only serving thread is held, and the thread is
# let go only once the wall clock is past the stamp by twice the limit.
class QueueTimeTest < SpindleIntegrationTest
  include MetricsScraper

  APP = app_path("queue")
  MAX = 0.05 # --max-queue-time: tiny; the waits below are made longer for sure
  ENGINES = {
    "blocking" => %w[--engine blocking],
    "threads" => %w[--engine threads -t 1:1],
    "fibers" => %w[--engine fibers],
    "hybrid" => %w[--engine hybrid --loops 1],
  }.freeze
  # 127.0.0.1 is the trusted proxy; ::1 is a client like any other.
  COMMON = ["-b", LOOPBACK, "-b", "tcp://[::1]:0", "--trusted-proxies", "127.0.0.1/32", "--metrics",
            "tcp://127.0.0.1:0", "--access-log", "-", "--access-log-format", "json", "--health-path", "/up"].freeze

  ENGINES.each do |name, engine|
    define_method("test_#{name}_reports_the_queue_time_in_the_env_the_access_log_and_the_metrics") do
      process = spawn_server(*engine, *COMMON, APP)
      before = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      seen = queue_time(process, process.binds.first, "/measured")
      assert_kind_of Float, seen["queue_time"]
      assert_operator seen["queue_time"], :>=, 0
      assert_operator seen["queue_start"], :>=, before, "the start is the request's first byte (monotonic)"
      assert_operator seen["queue_start"], :<=, Process.clock_gettime(Process::CLOCK_MONOTONIC)

      line = wait_until("the access log line") { access_lines(process).find { |l| l["target"] == "/measured" } }
      assert_in_delta seen["queue_time"] * 1000, line["queue_ms"], 0.001
      assert_equal 1, scrape(process)["spindle_request_queue_time_seconds_count", worker: 0]
    end

    define_method("test_#{name}_believes_x_request_start_from_a_trusted_proxy_only") do
      process = spawn_server(*engine, *COMMON, APP)
      stamp = Time.now.to_f - 100
      micros = ["X-Request-Start", "t=#{(stamp * 1_000_000).to_i}"]
      millis = ["X-Queue-Start", (stamp * 1000).to_i.to_s]
      [micros, millis].each do |field|
        trusted = queue_time(process, process.binds.first, "/trusted", [field])["queue_time"]
        assert_operator trusted, :>=, 99, "#{field.inspect} from 127.0.0.1 (trusted)"
        assert_operator trusted, :<, 200, "#{field.inspect}: the unit is read from the magnitude"
        untrusted = queue_time(process, process.binds.last, "/untrusted", [field])["queue_time"]
        assert_operator untrusted, :<, 99, "#{field.inspect} from ::1 (not trusted) must not count"
      end
      future = queue_time(process, process.binds.first, "/future", [["X-Request-Start", "t=#{Time.now.to_f + 100}"]])
      assert_operator future["queue_time"], :>=, 0, "a stamp from the future is no wait, never a negative one"
    end

    define_method("test_#{name}_sheds_a_request_that_waited_past_max_queue_time_but_never_the_health_check") do
      process = spawn_server(*engine, *COMMON, "--max-queue-time", MAX.to_s, APP)
      point = rendezvous
      held = connect(process)
      held.write(request("GET", "/hold?path=#{point.path}"))
      visit = point.await("entered")

      stamp = Time.now.to_f
      stamped = [["X-Request-Start", "t=#{(stamp * 1_000_000).to_i}"]]
      queued = connect(process)
      queued.write(request("GET", "/stale?shed-#{name}", stamped))
      health = connect(process)
      health.write(request("GET", "/up", stamped))
      wait_until("the wall clock past the stamp by twice --max-queue-time") { Time.now.to_f > stamp + 2 * MAX }
      visit.release

      assert_equal 200, held.read_response.status
      assert_shed queued.read_response, queued, proxied: true
      response = health.read_response
      assert_equal [200, "ok\n"], [response.status, response.body], "a health check is never shed"
      refute app_saw?("shed-#{name}", process), "the app was called for a shed request"
      assert_equal 1, scrape(process)["spindle_requests_shed_total", worker: 0, reason: "queue_time"]
      assert_match(/WARN spindle: shed a request that waited \d+\.\d{3}s, past --max-queue-time 0\.05s: 503$/,
                   process.output)
      line = wait_until("the access log line") { access_lines(process).find { |l| l["target"].include?("shed-") } }
      assert_equal 503, line["status"]
    end
  end

  # With every serving thread held (fibers: the loop's whole thread), a
  # keep-alive client's next request waits unread in the kernel: blocking
  # reads nothing, threads' parked connection is gathered at the next take
  # only, a fiber loop runs nothing. It counts from when the kernel received
  # it (ArrivalClock), not from the read once the thread is let go.
  ENGINES.each do |name, engine|
    define_method("test_#{name}_counts_the_wait_in_the_kernel_before_the_read") do
      process = spawn_server(*engine, *COMMON, APP)
      client = warmed_connections(process, 1).first
      visit = hold_the_thread(process)
      client.write(request("GET", "/measured?kernel"))
      sent_by = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      wait_until("the request waiting #{2 * MAX}s") { Process.clock_gettime(Process::CLOCK_MONOTONIC) > sent_by + 2 * MAX }
      visit.release

      seen = JSON.parse(client.read_response.body)
      assert_operator seen["queue_start"], :<=, sent_by, "the start is the first byte's arrival"
      assert_operator seen["queue_time"], :>=, 2 * MAX
    end
  end

  # The threads engine's reactor reads a request while the pool is busy: the
  # server's own clock sees the wait, with no proxy in front. The request is
  # queued (spindle_requests_backlog 1) before the test reads its clock, so it
  # was read by then, and the pool thread is let go twice the limit later.
  def test_threads_sheds_on_its_own_clock_a_request_queued_for_the_pool
    assert_shed_on_own_clock(ENGINES["threads"], "/hold")
  end

  # While a queue stands (its oldest request has waited half of
  # --max-queue-time), the threads engine's pool takes the newest first
  # (WaitOrder), keep-alive connections' requests too. Their connections
  # are parked, and the one pool thread is held: no take gathers them, so
  # they are seen once the reactor recalls them (Park::RECALL_AFTER) and
  # reads the first, and then the others as they come; the first counts
  # from then (so the wait is measured from its being queued).
  def test_threads_takes_the_newest_first_while_a_queue_stands_keep_alive_connections_included
    process = spawn_server(*ENGINES["threads"], *COMMON, "--max-queue-time", "3", APP)
    clients = warmed_connections(process, 3)
    visit = hold_the_thread(process)
    queued_by = nil
    clients.each_with_index do |client, i|
      client.write(request("GET", "/order-#{i}"))
      wait_until("request #{i} queued for the pool") { scrape(process)["spindle_requests_backlog", worker: 0] == i + 1 }
      queued_by ||= Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
    wait_until("the oldest past half of --max-queue-time") { Process.clock_gettime(Process::CLOCK_MONOTONIC) > queued_by + 1.8 }
    visit.release

    clients.each { |client| assert_equal 200, client.read_response.status }
    assert_equal %w[/order-2 /order-1 /order-0], served_in_order(process, 3), "newest first"
  end

  # The fiber engines with --app-concurrency 1: the request waits at the
  # loop's AppGate (spindle_requests_backlog 1) behind the held one, and is
  # shed as the pool's queue is. Without the gate it runs at once, beside
  # the held one, and its wait is never seen.
  %w[fibers hybrid].each do |name|
    define_method("test_#{name}_with_app_concurrency_sheds_on_its_own_clock_a_request_waiting_for_the_app") do
      assert_shed_on_own_clock([*ENGINES[name], "--app-concurrency", "1"], "/wait")
    end
  end

  private

  # hold: the route that holds the first request (/wait: its fiber only).
  def assert_shed_on_own_clock(engine, hold)
    process = spawn_server(*engine, *COMMON, "--max-queue-time", MAX.to_s, APP)
    point = rendezvous
    held = connect(process)
    held.write(request("GET", "#{hold}?path=#{point.path}"))
    visit = point.await("entered")
    queued = connect(process, process.binds.last) # ::1: no stamp believed, nor sent
    queued.write(request("GET", "/stale?unstamped"))
    wait_until("the request queued for the app") { scrape(process)["spindle_requests_backlog", worker: 0] == 1 }
    queued_by = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    wait_until("twice --max-queue-time since") { Process.clock_gettime(Process::CLOCK_MONOTONIC) > queued_by + 2 * MAX }
    visit.release

    assert_equal 200, held.read_response.status
    assert_shed queued.read_response, queued, proxied: false
    refute app_saw?("unstamped", process)
  end

  # count connections, each with one request served: keep-alive, idle.
  def warmed_connections(process, count)
    Array.new(count) do |i|
      connect(process).tap do |client|
        client.write(request("GET", "/warm-#{i}"))
        assert_equal 200, client.read_response.status
      end
    end
  end

  # The only pool thread held at the rendezvous: the visit, to release.
  def hold_the_thread(process)
    point = rendezvous
    (@held ||= []) << connect(process).tap { |held| held.write(request("GET", "/hold?path=#{point.path}")) }
    point.await("entered")
  end

  # The targets with "order-", in the order the access log wrote them
  # (with one pool thread, the order they were served).
  def served_in_order(process, count)
    wait_until("#{count} access log lines") do
      targets = access_lines(process).map { |line| line["target"] }.grep(/order-/)
      targets if targets.size == count
    end
  end

  # GET target on a new connection to bind: what the app saw, as JSON.
  def queue_time(process, bind, target, fields = [])
    connection = connect(process, bind)
    connection.write(request("GET", target, fields + [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, response.to_s
    JSON.parse(response.body)
  end

  # proxied: the request came from the trusted proxy (127.0.0.1), whose
  # connection stays open and serves its next request; a client's (::1)
  # closes.
  def assert_shed(response, connection, proxied:)
    assert_equal 503, response.status, response.to_s
    assert_equal "1", response["retry-after"]
    if proxied
      refute response.close?, "a shed response keeps a trusted proxy's connection:\n#{response}"
      connection.write(request("GET", "/after-shed"))
      assert_equal 200, connection.read_response.status, "the proxy's next request on it is served"
    else
      assert response.close?, "a shed response closes a client's connection:\n#{response}"
      connection.read_until_eof
    end
  end

  def access_lines(process)
    process.stdout.lines.select { |line| line.start_with?("{") }.map { |line| JSON.parse(line) }
  end
end
