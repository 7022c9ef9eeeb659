# frozen_string_literal: true

require "test_helper"
require "spindle/engine/connection_policy"
require_relative "../support/socket_connections"

# The one place both engine families ask how many connections to accept per
# wake-up, and what to close for a new client at the cap. Real Connections
# over real socket pairs.
class ConnectionPolicyTest < Minitest::Test
  include SocketConnections

  Policy = Spindle::Engine::ConnectionPolicy

  def teardown
    close_socket_connections
  end

  def test_the_accept_burst_alone_split_among_loops_and_in_a_cluster
    alone = Policy.new(Spindle::Config.new({}))
    cluster = Policy.new(Spindle::Config.new(workers: 2))

    assert_equal Policy::ACCEPT_BURST, alone.accept_burst
    assert_equal Policy::ACCEPT_BURST / 5, alone.accept_burst(loops: 5)
    assert_equal 1, alone.accept_burst(loops: Policy::ACCEPT_BURST * 2)
    assert_equal 1, cluster.accept_burst
    assert_equal Policy::ACCEPT_BURST, cluster.accept_burst(gated: true)
  end

  def test_below_the_cap_nothing_is_closed
    policy = Policy.new(Spindle::Config.new(max_connections: 2))
    assert_empty policy.room(1, [socket_connection(served: true).first])
  end

  # nil: the new client stays in the backlog rather than be accepted and
  # closed, or take the place of a connection whose request has arrived.
  def test_at_the_cap_with_nothing_to_close_there_is_no_room
    policy = Policy.new(Spindle::Config.new(max_connections: 2))
    fresh, = socket_connection
    spoken, client = socket_connection(served: true)
    client.write(REQUEST)

    assert_nil policy.room(2, [fresh, spoken])
  end

  # Picked, then its client sent a request before the new client was
  # accepted: it is not closed.
  def test_a_victim_that_spoke_since_it_was_picked_is_kept
    policy = Policy.new(Spindle::Config.new(max_connections: 2))
    spoke, client = socket_connection(served: true)
    quiet = socket_connection(served: true).first
    others = Array.new(14) { socket_connection(served: true).first } # 16 idle: two go at once
    victims = policy.room(2, [spoke, quiet, *others])
    assert_equal [spoke, quiet], victims
    client.write(REQUEST)

    closed = []
    policy.evict(victims) { |conn| closed << conn }
    refute_includes closed, spoke
    assert_includes closed, quiet
  end
end
