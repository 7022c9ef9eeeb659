# frozen_string_literal: true

require "pg"
require "connection_pool"

# A pool of PostgreSQL connections that is safe across fibers and threads.
#
# - pg >= 1.3 does its waiting (connect, send, wait for the result) through
#   IO#wait_readable, so under Spindle's fibers engine a query yields its fiber.
# - connection_pool waits for a free connection with a Mutex and a
#   ConditionVariable, which Ruby's Fiber::Scheduler also makes yield. It keys
#   checkouts by Thread.current[], which is fiber-local: each request's fiber
#   gets its own connection.
# - A connection the server dropped (restart, pg_terminate_backend) is reset and
#   the statement is tried once more on the fresh connection. Only retry
#   statements that are safe to repeat; this example's are all reads.
module DB
  SIZE = Integer(ENV.fetch("DB_POOL", "10"))
  CHECKOUT_TIMEOUT = Float(ENV.fetch("DB_CHECKOUT_TIMEOUT", "5"))

  POOL = ConnectionPool.new(size: SIZE, timeout: CHECKOUT_TIMEOUT) do
    PG.connect(ENV.fetch("DATABASE_URL", "postgresql:///postgres"))
  end

  module_function

  # Rows as hashes. The connection goes back to the pool when the block ends,
  # whatever happens, so a request never keeps one past its query.
  def query(sql, params = [])
    POOL.with do |conn|
      run(conn, sql, params)
    rescue PG::ConnectionBad, PG::UnableToSend
      raise unless conn.status == PG::CONNECTION_BAD

      conn.reset
      run(conn, sql, params)
    end
  end

  def run(conn, sql, params)
    conn.exec_params(sql, params).to_a
  end
end
