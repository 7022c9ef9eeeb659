# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/connection"
require "spindle/engine/outbox"
require "spindle/engine/eviction"

# Which connections a server at its cap closes for a new client: idle ones,
# oldest first, never one with a request under way or bytes waiting unread.
# Real Connections over real socket pairs.
class EvictionTest < Minitest::Test
  REQUEST = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"

  def setup
    @pairs = []
  end

  def teardown
    @pairs.each { |client, conn| client.close; conn.close }
  end

  def test_the_longest_idle_go_first
    conns = Array.new(16) { connection }
    assert_equal conns.first(2), Spindle::Engine::Eviction.pick(conns)
  end

  def test_a_connection_mid_request_is_never_picked
    busy = connection
    client_of(busy).write("GET / HTTP/1.1\r\n")
    busy.read_nonblock
    busy.advance
    idle = connection

    assert_equal [idle], Spindle::Engine::Eviction.pick([busy, idle])
  end

  def test_a_connection_whose_client_has_sent_unread_bytes_is_skipped
    spoken = connection
    client_of(spoken).write(REQUEST) # not read yet: closing would fail it
    quiet = connection

    assert_equal [quiet], Spindle::Engine::Eviction.pick([spoken, quiet])
  end

  def test_a_keep_alive_connection_counts_from_the_end_of_its_last_response
    served = connection
    fresh = connection
    client_of(served).write(REQUEST)
    served.read_nonblock
    assert_equal :complete, served.advance
    served.finish_request_env
    served.reset_for_next_request # idle again, from now: younger than fresh

    assert_equal [fresh], Spindle::Engine::Eviction.pick([served, fresh])
  end

  def test_a_connection_whose_client_left_may_go
    gone = connection
    client_of(gone).close
    assert_equal [gone], Spindle::Engine::Eviction.pick([gone, connection])
  end

  def test_nothing_idle_picks_nothing
    assert_empty Spindle::Engine::Eviction.pick([])
  end

  private

  def connection
    client, server = UNIXSocket.pair
    conn = Spindle::Connection.new(server, config = Spindle::Config.new({}), {},
                                    Spindle::Engine::Outbox.new(server, config))
    @pairs << [client, conn]
    conn
  end

  def client_of(conn) = @pairs.find { |_, c| c.equal?(conn) }.first
end
