# frozen_string_literal: true

require "test_helper"
require "spindle/engine/connections"
require_relative "../support/socket_connections"

# The one retire of both engine families: which reasons close at once and
# which let the close linger through the connection's holder. Real
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
  end

  def teardown
    close_socket_connections
  end

  def test_every_reason_but_done_and_refused_closes_at_once_even_while_the_client_sends
    (Connections::REASONS - %i[done refused]).each do |reason|
      conn, client = socket_connection(served: true)
      client.write(REQUEST) # a request on its way: no reason here waits for it
      refute Connections.retire(conn, reason, @holder)
      assert_predicate conn.io, :closed?, reason
    end
    assert_empty @holder.lingering
  end

  def test_done_lingers_through_the_holder_while_the_client_may_still_be_sending
    conn, client = socket_connection(served: true)
    client.write(REQUEST) # pipelined behind the last response
    refute Connections.retire(conn, :done, @holder)
    assert_equal [conn], @holder.lingering
    assert_predicate conn, :lingering?
    refute_predicate conn.io, :closed?
  end

  def test_done_with_nothing_unread_closes_at_once
    conn, = socket_connection(served: true)
    refute Connections.retire(conn, :done, @holder)
    assert_predicate conn.io, :closed?
    assert_empty @holder.lingering
  end
end
