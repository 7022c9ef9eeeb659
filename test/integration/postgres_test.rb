# frozen_string_literal: true

require "pg"
require_relative "../support/spindle_process"
require_relative "../support/postgres_server"

# examples/postgres on a real PostgreSQL server, with the fiber engines.
#
# The rendezvous is inside the database: the test holds an exclusive advisory
# lock, each request waits for a shared one, and the test counts the waiting
# backends in pg_stat_activity. An engine that serialised queries could never
# have N backends waiting at once, and would fail on the deadline.
module PostgresContract
  APP = File.join(SpindleProcess::ROOT, "examples", "postgres", "config.ru")
  APP_NAME = "spindle-test-app"
  N = 10
  DEADLINE = 15

  def setup
    super
    @db = PG.connect(PostgresServer.shared.url)
    @lock_key = rand(1 << 30)
  end

  def teardown
    @db&.close
    super
  end

  def test_queries_wait_concurrently_on_one_process
    app = start_app(pool: N)
    hold_lock do
      clients = Array.new(N) { get(app, "/wait?key=#{@lock_key}") }
      wait_until("#{N} backends waiting on the lock", deadline: DEADLINE, interval: 0.02) { waiting_backends == N }
      release_lock
      clients.each { |c| assert_equal 200, c.read_response.status }
    end
  end

  def test_waiting_for_a_pool_connection_yields
    app = start_app(pool: 2)
    hold_lock do
      clients = Array.new(4) { get(app, "/wait?key=#{@lock_key}") }
      wait_until("2 backends waiting on the lock", deadline: DEADLINE, interval: 0.02) { waiting_backends == 2 }
      # Two requests hold the pool's connections and two wait for one; the loop
      # must still answer a request that needs no database.
      assert_equal 200, get(app, "/ping").read_response.status
      assert_equal 2, waiting_backends, "the pool must never open more than its size"
      release_lock
      clients.each { |c| assert_equal 200, c.read_response.status }
    end
  end

  # connection_pool connects inside its lock, holding every other request
  # of the process meanwhile; the example opens its whole pool on the first
  # query so that no connect happens under load (examples/postgres/db.rb).
  def test_the_first_query_opens_the_whole_pool
    app = start_app(pool: 4)
    assert_equal 200, get(app, "/now").read_response.status
    assert_equal 4, app_backends, "the first query must leave the pool full"
    assert_equal 200, get(app, "/now").read_response.status
    assert_equal 4, app_backends, "a full pool opens no more"
  end

  def test_broken_connections_are_replaced
    app = start_app(pool: 2)
    assert_equal 200, get(app, "/now").read_response.status
    @db.exec_params("select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1", [APP_NAME])
    wait_until("no backend of the app left", deadline: DEADLINE, interval: 0.02) { app_backends.zero? }
    assert_equal 200, get(app, "/now").read_response.status
  end

  private

  def start_app(pool:)
    url = "#{PostgresServer.shared.url}&application_name=#{APP_NAME}"
    spawn_server("-b", SpindleIntegrationTest::LOOPBACK, "--engine", self.class.engine, *self.class.extra,
                 APP, env: { "DATABASE_URL" => url, "DB_POOL" => pool.to_s })
  end

  def get(app, target)
    connection = connect(app)
    connection.write(request("GET", target, [["Connection", "close"]]))
    connection
  end

  def hold_lock
    @db.exec_params("select pg_advisory_lock($1)", [@lock_key])
    @locked = true
    yield
  ensure
    release_lock
  end

  def release_lock
    return unless @locked

    @db.exec_params("select pg_advisory_unlock($1)", [@lock_key])
    @locked = false
  end

  def waiting_backends
    @db.exec_params("select count(*) from pg_stat_activity where application_name = $1 " \
                    "and wait_event_type = 'Lock'", [APP_NAME]).getvalue(0, 0).to_i
  end

  def app_backends
    @db.exec_params("select count(*) from pg_stat_activity where application_name = $1",
                    [APP_NAME]).getvalue(0, 0).to_i
  end
end

{ "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
  klass = Class.new(SpindleIntegrationTest) do
    include PostgresContract
    define_singleton_method(:engine) { engine }
    define_singleton_method(:extra) { extra }
  end
  Object.const_set("#{engine.capitalize}PostgresTest", klass)
end
