# frozen_string_literal: true

require "test_helper"
require "spindle/engine/park"
require_relative "../support/allocations"
require_relative "../support/socket_connections"

# Where the threads engine's pool leaves idle keep-alive connections: a
# parked connection whose client sends goes to one waiting thread; one idle
# too long, or due to expire, goes back to the reactor; at the stop the
# reactor takes them all, and nothing more is parked. Whoever takes a
# connection first owns it.
class ParkTest < Minitest::Test
  include Allocations
  include SocketConnections

  def setup
    @park = Spindle::Engine::Park.new
  end

  def teardown
    @park.release
    close_socket_connections
  end

  def test_a_parked_connection_whose_client_sends_goes_to_a_waiting_thread
    conn, client = socket_connection
    assert @park.park(conn)
    assert_equal 1, @park.size
    assert_nil @park.wait(0), "nothing sent yet"
    client.write("GET / HTTP/1.1\r\n")
    assert_same conn, @park.wait(5)
    assert @park.empty?, "the thread owns it now"
  end

  # A timed connection's request counts from when the park saw it begin
  # to arrive, before it is read: WaitOrder reads its age while it waits
  # unread in the pool's queue. The read that follows keeps that time.
  def test_a_timed_connection_counts_its_request_from_the_wake
    conn, client = socket_connection(timed: true)
    @park.park(conn)
    client.write(SocketConnections::REQUEST)
    before_wake = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_same conn, @park.wait(5)
    woke = conn.started_at
    assert_operator woke, :>=, before_wake
    conn.read_nonblock
    assert_equal :complete, conn.advance
    assert_equal woke, conn.started_at, "the read keeps the wake's time"
  end

  def test_queued_work_is_notified
    @park.notify
    assert_equal :notified, @park.wait(0)
  end

  def test_recall_takes_back_what_idled_long_or_is_due
    idle, = socket_connection(idle_since: 10.0, deadline: 100.0)
    due, = socket_connection(idle_since: 50.0, deadline: 60.0)
    fresh, fresh_client = socket_connection(idle_since: 50.0, deadline: 100.0)
    [idle, due, fresh].each { |conn| @park.park(conn) }
    recalled = []
    @park.recall(20.0, 60.0) { |conn| recalled << conn }
    assert_equal [idle, due].map(&:object_id).sort, recalled.map(&:object_id).sort
    assert_equal 1, @park.size
    fresh_client.write("G")
    assert_same fresh, @park.wait(5), "the one left is still armed"
  end

  def test_a_recalled_connection_is_no_threads_any_more
    conn, client = socket_connection(idle_since: 0.0)
    @park.park(conn)
    @park.recall(1.0, 0.0) { nil }
    client.write("GET / HTTP/1.1\r\n")
    assert_nil @park.wait(0), "unarmed: the reactor watches it now"
  end

  def test_close_yields_every_connection_and_parks_nothing_more
    parked = Array.new(2) { socket_connection.first }
    parked.each { |conn| @park.park(conn) }
    taken = []
    @park.close { |conn| taken << conn }
    assert_equal parked.map(&:object_id).sort, taken.map(&:object_id).sort
    refute @park.park(socket_connection.first), "stopping: the caller hands it to the reactor"
    assert @park.empty?
  end

  def test_a_connection_whose_socket_is_gone_is_not_parked
    conn, = socket_connection
    conn.io.close
    assert_raises(IOError) { @park.park(conn) } # a closed Ruby IO has no fileno
    assert @park.empty?
  end

  # Every keep-alive request passes here: on Ruby 3.1 a `return` out of the
  # lock's block allocated an object each time.
  def test_a_park_and_a_wait_allocate_nothing
    conn, client = socket_connection
    client.write("GET / HTTP/1.1\r\n")
    2.times { @park.park(conn) && @park.wait(5) } # warm: the first calls may allocate caches
    taken = nil
    allocations { nil } # warm the counting too
    overhead = allocations { nil }
    assert_equal overhead, allocations { taken = @park.park(conn) && @park.wait(5) }, "the count's own cost only"
    assert_same conn, taken
  end

end
