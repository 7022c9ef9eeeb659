# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# --request-timeout on every engine (docs/DEADLINES.md): a request past its
# deadline is answered 503 and logged with its method and path, however it
# spent the time (a wait, a CPU loop); the process serves on, and holds no
# more threads, fibers or descriptors than before. The fiber engines cancel
# the request at its wait (its ensure runs at once); blocking and threads let
# it run and answer 503 when it returns.
#
# The deadline is 0.5 s and every route waits far longer (deadline.ru), so no
# outcome depends on how fast the machine is.
module RequestTimeoutContract
  DEADLINE = "0.5"

  def setup
    super
    @app = spawn_server("-b", SpindleIntegrationTest::LOOPBACK, "--engine", self.class.engine, *self.class.extra,
                        "--request-timeout", DEADLINE, "--no-cpu-affinity", app_path("deadline"))
  end

  def test_a_request_waiting_past_its_deadline_gets_a_503
    marker = File.join(Dir.mktmpdir("spindle-deadline"), "ensure")
    response = get("#{sleep_route}&ensure=#{marker}")
    assert_equal 503, response.status, @app.output
    assert_equal "request timed out\n", response.body
    said = self.class.cancels? ? "raising Spindle::RequestTimeout at its wait" : "it runs on"
    assert @app.wait_for_output(%r{request timeout: GET /sleep .*passed its deadline.*#{said}}), @app.output
    assert File.exist?(marker), "the request's ensure should have run before its 503"
    assert_equal 200, get("/ok").status
  end

  def test_a_cpu_loop_past_its_deadline_gets_a_503
    response = get("/spin")
    assert_equal 503, response.status, @app.output
    assert @app.wait_for_output(%r{request timeout: GET /spin }), @app.output
    assert_equal 200, get("/ok").status
  end

  def test_the_app_may_extend_its_deadline
    assert_equal 200, get("/extend").status, @app.output
    refute_match(%r{request timeout: GET /extend}, @app.output)
  end

  def test_the_deadline_is_in_the_env
    deadline = JSON.parse(get("/deadline").body)
    assert_equal 0.5, deadline["seconds"]
    assert_operator deadline["remaining"], :>, 0
    assert_operator deadline["remaining"], :<=, 0.5
  end

  # A first round makes what a process makes once (a loop's stall report on
  # the first spin); three more must leave no more than it held after it.
  def test_timed_out_requests_leave_nothing_behind
    timed_out_round
    before = census
    3.times { timed_out_round }
    assert_settles_at(before)
  end

  private

  # The fiber engines cancel a sleep of 30 s; the others let it run, so it
  # sleeps only until its deadline passed.
  def sleep_route = self.class.cancels? ? "/sleep?" : "/sleep?flagged=1"

  def timed_out_round
    assert_equal 503, get(sleep_route).status
    assert_equal 503, get("/spin").status
  end

  def get(target)
    roundtrip(request("GET", target, [["Connection", "close"]]), @app)
  end

  # Every count of the census back to at most where it was
  # (--no-cpu-affinity: the affinity watch's thread may end meanwhile, by
  # design; a connection's fiber may still linger at the first look),
  # within a bound for a hang.
  def assert_settles_at(before, bound: 30)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + bound
    until within?(now = census, before)
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC), :<, limit,
                      "the process should be back to #{before}, it holds #{now}"
      sleep 0.05
    end
  end

  def within?(now, before)
    now["threads"].all? { |name, count| count <= before["threads"].fetch(name, 0) } &&
      now["fibers"] <= before["fibers"] && now["fds"] <= before["fds"]
  end

  # Threads by name and live fibers (the app counts them), open descriptors.
  def census
    JSON.parse(get("/census").body).merge("fds" => Dir.children("/proc/#{@app.pid}/fd").size)
  end
end

# threads: one pool thread, so that the census's first round has warmed
# every thread that serves: on Ruby 3.4 a pool thread's first timed-out
# request left one more fiber and descriptor, once (not more after eight
# rounds), and the round had gone to the other thread.
{ "blocking" => [], "threads" => ["-t", "1:1"], "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
  klass = Class.new(SpindleIntegrationTest) do
    include RequestTimeoutContract
    define_singleton_method(:engine) { engine }
    define_singleton_method(:extra) { extra }
    define_singleton_method(:cancels?) { %w[fibers hybrid].include?(engine) }
  end
  Object.const_set("#{engine.capitalize}RequestTimeoutTest", klass)
end
