# frozen_string_literal: true

require "pg"
require_relative "../support/spindle_process"
require_relative "../support/postgres_server"

# --request-timeout and a query on a pooled PostgreSQL connection
# (examples/postgres, a pool of one connection, so the next request gets the
# same one). A query past the deadline is answered 503, nothing of it runs on
# in the database, and the next request's query on that connection succeeds:
# without DB.settle (the example's recipe, docs/DEADLINES.md) it would first
# wait for the cancelled query's result, past its own deadline.
module RequestTimeoutPostgresContract
  APP = File.join(SpindleProcess::ROOT, "examples", "postgres", "config.ru")
  APP_NAME = "spindle-deadline-app"

  def setup
    super
    @db = PG.connect(PostgresServer.shared.url)
    url = "#{PostgresServer.shared.url}&application_name=#{APP_NAME}"
    @app = spawn_server("-b", SpindleIntegrationTest::LOOPBACK, "--engine", self.class.engine, *self.class.extra,
                        "--request-timeout", "1", APP, env: { "DATABASE_URL" => url, "DB_POOL" => "1" })
  end

  def teardown
    @db&.close
    super
  end

  # Every engine: the statement_timeout from env["spindle.deadline"] ends the
  # query in the database at the deadline.
  def test_a_query_bounded_by_the_deadline_gets_a_503_and_the_connection_serves_on
    assert_equal 503, get("/sleep_by_deadline?seconds=30").status, @app.output
    assert @app.wait_for_output(%r{request timeout: GET /sleep_by_deadline }), @app.output
    assert_equal 200, get("/now").status, @app.output
    assert_no_query_left
  end

  private

  def get(target)
    roundtrip(request("GET", target, [["Connection", "close"]]), @app)
  end

  def assert_no_query_left
    # pg_sleep(30) would end by itself: the bound is well within it.
    wait_until("no pg_sleep running for the app", deadline: 10) do
      @db.exec_params("select count(*) from pg_stat_activity where application_name = $1 and state = 'active'",
                      [APP_NAME]).getvalue(0, 0).to_i.zero?
    end
  end
end

# The fiber engines also cancel a query with no statement_timeout, at its wait.
module RequestTimeoutPostgresCancel
  def test_a_query_cancelled_at_its_wait_gets_a_503_and_the_connection_serves_on
    assert_equal 503, get("/sleep?seconds=30").status, @app.output
    assert @app.wait_for_output(%r{request timeout: GET /sleep .*raising Spindle::RequestTimeout}), @app.output
    assert_equal 200, get("/now").status, @app.output
    assert_no_query_left
  end
end

{ "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
  klass = Class.new(SpindleIntegrationTest) do
    include RequestTimeoutPostgresContract
    include RequestTimeoutPostgresCancel if %w[fibers hybrid].include?(engine)
    define_singleton_method(:engine) { engine }
    define_singleton_method(:extra) { extra }
  end
  Object.const_set("#{engine.capitalize}RequestTimeoutPostgresTest", klass)
end
