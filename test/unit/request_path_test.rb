# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/handler_harness"
require "spindle/process/phase"

# RequestPath: the steps the options put on a request's way, put together
# once when the Handler is built, and only those that are on; and what each
# step does there, served in-process over a socket pair.
class RequestPathTest < Minitest::Test
  include HandlerHarness

  APP = ->(_env) { [200, { "content-type" => "text/plain" }, ["app\n"]] }
  GET = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
  NONE = { app: [], response: [], finish: [] }.freeze

  def teardown
    @clients&.each(&:close)
    FileUtils.rm_rf(@dir) if @dir
  end

  def test_with_the_defaults_no_step_is_on
    [false, true].each do |multithread|
      path = handler(multithread: multithread).path
      assert_equal NONE, path.steps
      assert_same APP, path.app, "the app stage is the app itself"
      assert_nil path.shedding
    end
  end

  def test_each_option_puts_its_step_in_place
    @dir = Dir.mktmpdir("spindle-request-path")
    config = { health_path: "/up", static: @dir, trusted_proxies: Spindle::HTTP::Forwarded.parse_networks(%w[::1]),
               oob_gc_every: 10, max_queue_time: 1.0, request_timeout: 5.0 }
    path = handler(access_log: true, multiprocess: true, **config).path
    assert_equal({ app: %w[QueueTiming ForwardedHeaders AccessLogging Health QueueShedding Static RequestDeadline],
                   response: %w[AccessLogging Shedding], finish: %w[OobGc] }, path.steps)
  end

  # Each step is built around the chain so far: ForwardedHeaders around the
  # bare app skipped the access log and the health check behind it.
  def test_with_trusted_proxies_the_steps_inside_still_run
    handler = handler(access_log: true, health_path: "/up", trusted_proxies: Spindle::HTTP::Forwarded.parse_networks(%w[127.0.0.1]))
    conn, client = connect(handler)
    client.write("GET /up HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 192.0.2.9\r\n\r\n")
    read_request(conn)
    handler.serve(conn)
    assert_match(/\r\n\r\nok\n\z/, client.readpartial(65_536), "the health check answers, not the app")
    assert_match(%r{\A192\.0\.2\.9 .* "GET /up HTTP/1\.1" 200 3 }, @access.string)
  end

  def test_queue_time_is_measured_only_when_something_reads_it
    refute handler.path.timed?
    assert handler(metrics: "tcp://127.0.0.1:0").path.timed?
    assert handler(access_log: true).path.timed?
    assert handler(max_queue_time: 1.0).path.timed?
    conn, client = connect(handler)
    assert_instance_of Spindle::Connection, conn, "a plain connection: not even a flag to test per request"
    assert_instance_of Spindle::TimedConnection, connect(handler(metrics: "tcp://127.0.0.1:0")).first
    client.write(GET)
    read_request(conn)
    refute conn.finish_request_env.key?(Spindle::TimedConnection::QUEUE_START), "no clock read for it when off"
  end

  def test_a_request_that_waited_past_max_queue_time_is_shed_before_the_app
    calls = 0
    app = lambda do |env|
      calls += 1
      APP.call(env)
    end
    handler = handler(app: app, max_queue_time: 1.0, health_path: "/up", metrics: "tcp://127.0.0.1:0",
                      trusted_proxies: Spindle::HTTP::Forwarded.parse_networks(%w[127.0.0.1]))
    stale = "X-Request-Start: t=#{((Time.now.to_f - 10) * 1e6).to_i}\r\n"
    conn, client = connect(handler)
    assert_equal [:keep_alive, "503"], exchange(handler, conn, client, "GET / HTTP/1.1\r\nHost: x\r\n#{stale}\r\n"),
                 "shed, and the trusted proxy's connection kept"
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, "GET /up HTTP/1.1\r\nHost: x\r\n#{stale}\r\n"),
                 "a health check is never shed"
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, GET), "a fresh request is served"
    assert_equal 1, calls, "the app saw the fresh request only"
    assert_equal 1, handler.tracker.shed
    assert_equal 3, handler.tracker.queue_times.count
    assert_match(/WARN spindle: shed a request that waited 10\.\d{3}s, past --max-queue-time 1s: 503$/, logged_errors)
  end

  # The peer of these socket pairs is 127.0.0.1: trusted here, so its stamp
  # counts and its connection stays open for the proxy's next request.
  def test_the_503_says_retry_after_and_keeps_a_trusted_proxys_connection
    head, outcome = shed_head(trusted_proxies: Spindle::HTTP::Forwarded.parse_networks(%w[127.0.0.1]),
                              stamp: "X-Request-Start: t=#{Time.now.to_f - 10}\r\n")
    assert_equal "HTTP/1.1 503 Service Unavailable", head.first
    assert_includes head, "retry-after: 1"
    refute_includes head, "connection: close"
    assert_equal :keep_alive, outcome
  end

  # Untrusted (no --trusted-proxies): the wait is the server's own, made
  # longer than a 1 ms limit by waiting for the clock, and the 503 closes.
  def test_the_503_to_a_client_not_a_trusted_proxy_closes_its_connection
    head, outcome = shed_head(trusted_proxies: nil, stamp: "")
    assert_equal "HTTP/1.1 503 Service Unavailable", head.first
    assert_includes head, "retry-after: 1"
    assert_includes head, "connection: close"
    assert_equal :close, outcome
  end

  # A pipelined request waits behind its own connection's earlier one, by
  # its client's choice: its wait starts when that response has ended, not
  # when its bytes came in with the first.
  def test_a_pipelined_request_counts_from_the_end_of_the_previous_response
    called = []
    app = lambda do |env|
      called << [Process.clock_gettime(Process::CLOCK_MONOTONIC), env[Spindle::TimedConnection::QUEUE_START]]
      APP.call(env)
    end
    handler = handler(app: app, max_queue_time: 60.0)
    conn, client = connect(handler)
    client.write(GET + GET)
    read_request(conn)
    assert_equal :keep_alive, handler.serve(conn)
    assert_equal :complete, conn.advance, "the second request was read with the first"
    handler.serve(conn)
    (first_called, first_start), (_, second_start) = called
    assert_operator first_start, :<=, first_called
    assert_operator second_start, :>, first_called, "counted from the end of the first response"
  end

  def test_the_health_path_and_keep_alive_follow_the_phase
    phase = Spindle::Phase.new
    handler = handler(phase: phase, health_path: "/up")
    conn, client = connect(handler)
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, "GET /up HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, GET), "other paths go to the app"

    phase.leave!
    assert_equal [:close, "503"], exchange(handler, conn, client, "GET /up HTTP/1.1\r\nHost: x\r\n\r\n")
    conn, client = connect(handler)
    assert_equal [:close, "200"], exchange(handler, conn, client, GET), "the app still serves during the drain delay"
  end

  def test_a_cluster_workers_handler_sheds_one_connection_per_ask
    handler = handler(multiprocess: true)
    conn, client = connect(handler)
    refute handler.shedding?
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, GET)

    handler.shed_one!
    assert handler.shedding?
    assert_equal [:close, "200"], exchange(handler, conn, client, GET)
    refute handler.shedding?, "one close per ask"
    conn, client = connect(handler)
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, GET)
  end

  def test_a_single_process_handler_has_nothing_to_shed
    single = handler
    assert_nil single.shed_one!
    refute single.shedding?
    conn, client = connect(single)
    assert_equal [:keep_alive, "200"], exchange(single, conn, client, GET)
  end

  def test_the_access_log_says_what_the_client_got
    invalid = ->(env) { env["PATH_INFO"] == "/bad" ? [99, {}, []] : APP.call(env) } # no such status
    handler = handler(app: invalid, access_log: true)
    conn, client = connect(handler)
    assert_equal [:keep_alive, "200"], exchange(handler, conn, client, GET)
    assert_equal [:close, "500"], exchange(handler, conn, client, "GET /bad HTTP/1.1\r\nHost: x\r\n\r\n")

    lines = @access.string.lines
    assert_equal 2, lines.size
    assert_match %r{"GET / HTTP/1\.1" 200 4 }, lines[0]
    assert_match %r{"GET /bad HTTP/1\.1" 500 #{Spindle::RequestPath::ERROR_BODY.bytesize} }, lines[1],
                 "the writer's 500 went out in place of the app's response"
    assert_match(/ \d+\.\d{3}\n\z/, lines[0], "a duration")
  end

  def test_the_out_of_band_gc_runs_after_every_nth_request
    handler = handler(oob_gc_every: 2)
    conn, client = connect(handler)
    GC.start # an incidental major GC is now unlikely in the next two requests
    before = GC.stat(:major_gc_count)
    exchange(handler, conn, client, GET)
    exchange(handler, conn, client, GET)
    assert_operator GC.stat(:major_gc_count), :>, before, "no full GC after the 2nd request"
  end

  # --request-timeout: the app reads and moves its deadline; a call that
  # ended past it is a 503 (its body closed unsent), and so is an error out
  # of it; an error within it is the app's 500.
  def test_a_call_past_its_deadline_is_answered_503
    closed = []
    body = Class.new(Array) { define_method(:close) { closed << :body } }.new(["late\n"])
    app = lambda do |env|
      deadline = env.fetch("spindle.deadline")
      case env["PATH_INFO"]
      when "/late" then deadline.set(-1) # as if the time had gone by
      when "/late-error" then deadline.shorten_by(10) && raise("wrapped timeout")
      when "/error" then raise "the app's own"
      end
      [200, { "content-type" => "text/plain" }, body]
    end
    handler = handler(app: app, request_timeout: 5.0)
    assert_equal [:keep_alive, "200"], exchange(handler, *connect(handler), GET)
    assert_equal [:keep_alive, "503"], exchange(handler, *connect(handler), "GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_equal %i[body body], closed, "the late body is closed unsent"
    assert_equal [:keep_alive, "503"],
                 exchange(handler, *connect(handler), "GET /late-error HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_equal [:keep_alive, "500"], exchange(handler, *connect(handler), "GET /error HTTP/1.1\r\nHost: x\r\n\r\n")
  end

  def test_a_deadline_moves_until_it_passed
    deadline = Spindle::Deadline.new(1.0, 100.0)
    assert_equal 101.0, deadline.at
    assert_equal 103.0, deadline.extend_by(2)
    assert_equal 102.5, deadline.shorten_by(0.5)
    refute deadline.due?(102.0)
    assert deadline.due?(102.5)
    assert deadline.pass!
    refute deadline.pass!, "passed once"
    assert_equal 102.5, deadline.extend_by(60), "a deadline that passed stays where it was"
    assert deadline.finish(103.0)
    assert deadline.late?
    refute deadline.due?(200.0), "a finished call is never watched again"
  end

  private

  def handler(app: APP, access_log: false, multithread: false, multiprocess: false, phase: Spindle::Phase.new,
              **config)
    log = quiet_log
    if access_log
      @access = StringIO.new
      log.access_log = Spindle::Log::AccessLog.new(Spindle::Log::Sink.new(@access), "combined", log)
    end
    Spindle::Handler.new(app, build_config(**config), log, multithread: multithread, multiprocess: multiprocess,
                                                           phase: phase)
  end

  def connect(handler)
    client, server = UNIXSocket.pair
    (@clients ||= []) << client << server
    conn = handler.open_connection(server, FakeListener.new("localhost", "80"),
                                   Spindle::Engine::Outbox.new(server, build_config))
    [conn, client]
  end

  # A request shed under --max-queue-time 1 ms: its response's head lines
  # and the outcome. Served once the clock is 10 ms past its first byte.
  def shed_head(trusted_proxies:, stamp:)
    handler = handler(max_queue_time: 0.001, trusted_proxies: trusted_proxies)
    conn, client = connect(handler)
    client.write("GET / HTTP/1.1\r\nHost: x\r\n#{stamp}\r\n")
    read_request(conn)
    read_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    Thread.pass while Process.clock_gettime(Process::CLOCK_MONOTONIC) < read_at + 0.01
    outcome = handler.serve(conn)
    [client.readpartial(65_536).split("\r\n\r\n").first.split("\r\n"), outcome]
  end

  # One request on conn: the outcome, and the status the client read.
  def exchange(handler, conn, client, request)
    client.write(request)
    read_request(conn)
    outcome = handler.serve(conn)
    [outcome, client.readpartial(65_536)[%r{\AHTTP/1\.1 (\d{3})}, 1]]
  end
end
