# frozen_string_literal: true

require "test_helper"
require "spindle/engine/connections"
require_relative "../support/socket_connections"

# The owner of a loop's open connections, and its one way out (#retire,
# #close): which reasons close at once and which let the close linger
# through the connection's holder; that a connection leaves once, and that
# one the app took over (#release) is neither counted nor closed. Real
# Connections over real socket pairs; the holder is a recorder.
class ConnectionsTest < Minitest::Test
  include SocketConnections

  Connections = Spindle::Engine::Connections

  # What an engine's holder is told (Selection, Mailbox, FiberLoop).
  class Holder
    attr_reader :lingering

    def initialize = @lingering = []
    def owe(_conn) = raise("nothing is owed here")
    def linger(conn) = @lingering << conn
  end

  def setup
    @holder = Holder.new
    @connections = Connections.new
  end

  def teardown
    close_socket_connections
  end

  def test_every_reason_but_done_and_refused_closes_at_once_even_while_the_client_sends
    (Connections::REASONS - %i[done refused]).each do |reason|
      conn, client = open_connection(served: true)
      client.write(REQUEST) # a request on its way: no reason here waits for it
      refute @connections.retire(conn, reason, @holder)
      assert_predicate conn.io, :closed?, reason
    end
    assert_empty @holder.lingering
    assert_equal 0, @connections.count
  end

  def test_done_lingers_through_the_holder_while_the_client_may_still_be_sending
    conn, client = open_connection(served: true)
    client.write(REQUEST) # pipelined behind the last response
    refute @connections.retire(conn, :done, @holder)
    assert_equal [conn], @holder.lingering
    assert_predicate conn, :lingering?
    refute_predicate conn.io, :closed?
    assert_includes @connections, conn, "a close that lingers is still open"

    @connections.close(conn, :done) # the holder, once the client is done
    assert_predicate conn.io, :closed?
    assert_equal 0, @connections.count
  end

  def test_done_with_nothing_unread_closes_at_once
    conn, = open_connection(served: true)
    refute @connections.retire(conn, :done, @holder)
    assert_predicate conn.io, :closed?
    assert_empty @holder.lingering
  end

  def test_counts_each_connection_from_its_add_to_its_close
    first, = open_connection
    second, = open_connection
    assert_equal 2, @connections.count
    assert_equal [first, second].map(&:object_id).sort, @connections.to_a.map(&:object_id).sort
    assert_equal @connections.to_a, @connections.each.to_a

    @connections.close(first, :client_closed)
    assert_equal [second], @connections.to_a
    refute_includes @connections, first
    refute_predicate second.io, :closed?
  end

  def test_a_second_retire_or_close_does_nothing
    conn, client = open_connection(served: true)
    client.write(REQUEST) # a lingering reason would hand it to the holder
    @connections.close(conn, :deadline)
    assert_predicate conn.io, :closed?

    refute @connections.retire(conn, :done, @holder)
    refute @connections.close(conn, :stopped)
    assert_empty @holder.lingering, "a connection gone is nobody's to linger"
    assert_equal 0, @connections.count
  end

  def test_a_connection_the_app_took_over_is_neither_counted_nor_closed
    conn, client = open_connection(served: true)
    assert_nil @connections.release(conn)
    assert_equal 0, @connections.count

    @connections.retire(conn, :done, @holder)
    @connections.close(conn, :stopped)
    refute_predicate conn.io, :closed?, "the app's socket stays open"
    client.write("still the app's")
    assert_equal "still the app's", conn.io.readpartial(64)
  end

  def test_a_connection_closed_from_several_threads_at_once_is_closed_once
    conns = Array.new(50) { open_connection.first }
    closed = Queue.new
    conns.each { |conn| conn.define_singleton_method(:close) { closed << self } }
    Array.new(4) { Thread.new { conns.each { |conn| @connections.close(conn, :stopped) } } }.each(&:join)
    assert_equal 50, closed.size, "each connection closes once, whichever thread takes it"
    assert_equal 0, @connections.count
  end

  def test_discard_closes_a_socket_that_never_became_a_connection
    socket, = UNIXSocket.pair
    (@socket_pairs ||= []) << [socket]
    refute @connections.discard(socket, :stopped)
    assert_predicate socket, :closed?
    assert_equal 0, @connections.count
  end

  private

  # A connection as an engine's accept leaves it: the owner's.
  def open_connection(served: false)
    conn, client = socket_connection(served: served)
    assert_same conn, @connections.add(conn)
    [conn, client]
  end
end
