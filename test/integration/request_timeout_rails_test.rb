# frozen_string_literal: true

require_relative "../support/app_server"

# --request-timeout with ActiveRecord's pool (test/apps/rails, a pool of one
# connection) on the fiber engines: a pg_sleep past the deadline is answered
# 503, and the next request's query on the same pooled connection succeeds.
# SleepsController settles the connection (docs/DEADLINES.md); without it the
# connection went back to the pool busy, and the next query waited for the
# cancelled one, past its own deadline.
module RequestTimeoutRailsContract
  SECRET_KEY_BASE = "spindle-test-secret-key-base-" * 4
  APP_NAME = "spindle-deadline-rails"

  def self.database_url
    @database_url ||= AppServer.create_database("spindle_deadline_rails")
  end

  def setup
    super
    url = "#{RequestTimeoutRailsContract.database_url}&application_name=#{APP_NAME}"
    env = { "RAILS_ENV" => "production", "RACK_ENV" => "production", "SECRET_KEY_BASE" => SECRET_KEY_BASE,
            "DATABASE_URL" => url, "DB_POOL" => "1" }
    @app = spawn_server("-b", SpindleIntegrationTest::LOOPBACK, "--engine", self.class.engine, *self.class.extra,
                        "--request-timeout", "1", "config.ru", **AppServer.spawn_options("rails", env))
    @db = PG.connect(PostgresServer.shared.url)
  end

  def teardown
    @db&.close
    super
  end

  def test_a_query_cut_short_leaves_the_pooled_connection_usable
    assert_equal 503, get("/sleep?seconds=30").status, @app.output
    assert @app.wait_for_output(%r{request timeout: GET /sleep .*raising Spindle::RequestTimeout}), @app.output
    response = get("/sleep?seconds=0")
    assert_equal [200, "slept\n"], [response.status, response.body], @app.output
    wait_until("no query of the app running", deadline: 10) do
      @db.exec_params("select count(*) from pg_stat_activity where application_name = $1 and state = 'active'",
                      [APP_NAME]).getvalue(0, 0).to_i.zero?
    end
  end

  private

  def get(target)
    roundtrip(request("GET", target, [["Connection", "close"]]), @app)
  end
end

{ "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
  klass = Class.new(SpindleIntegrationTest) do
    include RequestTimeoutRailsContract
    define_singleton_method(:engine) { engine }
    define_singleton_method(:extra) { extra }
  end
  Object.const_set("#{engine.capitalize}RequestTimeoutRailsTest", klass)
end
