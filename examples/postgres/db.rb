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
# - connection_pool opens a connection inside its lock, on a checkout that
#   finds none free, so every other checkout and checkin of the process waits
#   behind that connect. Under a fiber engine that is every request of the
#   process; connects one after another (30-70 ms each on a loaded 2-core
#   machine) held requests for up to 450 ms. So the first query in each
#   process opens the whole pool at once (#fill), and later ones never connect
#   (but to replace a dropped connection).
# - A query cut short on the Ruby side (Spindle::RequestTimeout raised at its
#   wait by --request-timeout, or any other exception there) still runs on
#   the server, and pg's next query on the connection first waits for its
#   result: the next request to take the connection from the pool would wait
#   for the query it never sent. #settle cancels it before the connection goes
#   back (docs/DEADLINES.md).
module DB
  SIZE = Integer(ENV.fetch("DB_POOL", "10"))
  CHECKOUT_TIMEOUT = Float(ENV.fetch("DB_CHECKOUT_TIMEOUT", "5"))

  POOL = ConnectionPool.new(size: SIZE, timeout: CHECKOUT_TIMEOUT) do
    PG.connect(ENV.fetch("DATABASE_URL", "postgresql:///postgres"))
  end

  FILL_LOCK = Mutex.new
  @filled_in = nil # the pid whose pool is full: a forked child fills its own

  module_function

  # Rows as hashes. The connection goes back to the pool when the block ends,
  # whatever happens, so a request never keeps one past its query.
  # deadline: the request's env["spindle.deadline"] (--request-timeout), or
  # nil; with one, the server ends the statement when the deadline passes
  # (statement_timeout), as a blocking or threads engine cannot.
  def query(sql, params = [], deadline: nil)
    fill unless @filled_in == Process.pid
    POOL.with do |conn|
      deadline ? run_by(conn, deadline, sql, params) : run(conn, sql, params)
    rescue PG::ConnectionBad, PG::UnableToSend
      raise unless conn.status == PG::CONNECTION_BAD

      conn.reset
      run(conn, sql, params)
    rescue Exception # rubocop:disable Lint/RescueException -- Spindle::RequestTimeout is one
      settle(conn)
      raise
    end
  end

  # A statement still running on the server (the exception came at its
  # wait) is cancelled and its result taken, so the connection goes back to
  # the pool ready for the next query; one that cannot be is reset.
  def settle(conn)
    return unless conn.transaction_status == PG::PQTRANS_ACTIVE

    conn.cancel
    conn.reset unless conn.discard_results
  rescue PG::Error
    conn.reset
  end

  # The statement in a transaction of its own whose statement_timeout is
  # what is left of the deadline (at least 1 ms: 0 would mean none).
  def run_by(conn, deadline, sql, params)
    conn.transaction do
      conn.exec("set local statement_timeout = #{[(deadline.remaining * 1000).ceil, 1].max}")
      run(conn, sql, params)
    end
  end

  # Opens SIZE connections: SIZE threads each check one out (a checkout is
  # keyed by thread, so each gets its own) and hold it until all have one.
  # Threads, not fibers, so that this works the same under any engine. A
  # connect that fails is raised here, and the next query tries again.
  def fill
    FILL_LOCK.synchronize do
      return if @filled_in == Process.pid

      held = Thread::Queue.new
      release = Thread::Queue.new
      threads = Array.new(SIZE) do
        Thread.new do
          POOL.with { held << nil; release.pop }
        rescue StandardError => e
          held << e
        end
      end
      failures = Array.new(SIZE) { held.pop }.compact
      SIZE.times { release << true }
      threads.each(&:join)
      raise failures.first unless failures.empty?

      @filled_in = Process.pid
    end
  end

  def run(conn, sql, params)
    conn.exec_params(sql, params).to_a
  end
end
