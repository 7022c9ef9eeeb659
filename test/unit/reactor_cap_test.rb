# frozen_string_literal: true

require "test_helper"
require "spindle/engine/park"
require "spindle/engine/deadlines"
require "spindle/engine/selection"
require "spindle/engine/reactor"
require "spindle/engine/mailbox"
require "spindle/engine/connection_policy"
require_relative "../support/socket_connections"

# The threads engine at --max-connections with every idle connection parked
# (Park): none of them is in the reactor's selection, where eviction looks
# for the connections idle the longest. Reactor#make_room brings them back,
# so the oldest can be closed at once (SelectorLoop#room asks it when the
# selection has none to close); before, a new client waited in the backlog
# until the park's recall (Park::RECALL_AFTER) brought them back.
class ReactorCapTest < Minitest::Test
  include SocketConnections

  def setup
    @config = Spindle::Config.new({})
    @policy = Spindle::Engine::ConnectionPolicy.new(@config)
    @deadlines = Spindle::Engine::Deadlines.new(@config)
    @selection = Spindle::Engine::Selection.new([], nil, @deadlines, Spindle::Engine::Connections.new)
    @park = Spindle::Engine::Park.new
    @reactor = Spindle::Engine::Reactor.new(@selection, nil, @deadlines, nil,
                                            Spindle::Engine::Mailbox.new(@selection, @park), alone: true)
  end

  def teardown
    @park.release
    @selection.close
    close_socket_connections
  end

  def test_at_the_cap_parked_connections_come_back_and_the_oldest_makes_room
    now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    oldest = connection(idle_since: now - 0.5)
    newer = connection(idle_since: now - 0.1)
    [newer, oldest].each { |conn| assert @park.park(conn) }

    # The cap is 2 and both are parked: none in the selection may go.
    assert_nil @policy.room(2, @selection.connections, 2)
    assert @reactor.make_room

    assert_equal [oldest], @policy.room(2, @selection.connections, 2), "the connection idle the longest goes first"
    assert @park.empty?, "every parked connection is back in the selection"
    assert_equal 2, @selection.size
  end

  def test_with_nothing_parked_the_selection_is_full
    refute @reactor.make_room
    assert_nil @policy.room(1, @selection.connections, 1)
  end

  private

  # Only keep-alive connections are parked: each has served a request.
  def connection(idle_since:) = socket_connection(idle_since: idle_since, served: true).first
end
