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
               oob_gc_every: 10, request_timeout: 5.0 }
    path = handler(access_log: true, multiprocess: true, **config).path
    assert_equal({ app: %w[ForwardedHeaders AccessLogging Health Static RequestDeadline],
                   response: %w[AccessLogging Shedding],
                   finish: %w[OobGc] }, path.steps)
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

  # One request on conn: the outcome, and the status the client read.
  def exchange(handler, conn, client, request)
    client.write(request)
    read_request(conn)
    outcome = handler.serve(conn)
    [outcome, client.readpartial(65_536)[%r{\AHTTP/1\.1 (\d{3})}, 1]]
  end
end
