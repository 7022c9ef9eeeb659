# frozen_string_literal: true

require "minitest/autorun"
require "spindle/engine/eviction"
require_relative "../support/socket_connections"

# Which connections a server at its cap closes for a new client: keep-alive
# connections between requests, oldest first, never one with a request under
# way or bytes waiting unread; a new connection only once it has been silent
# past the grace, and after the keep-alive ones. Real Connections over real
# socket pairs.
class EvictionTest < Minitest::Test
  include SocketConnections

  Eviction = Spindle::Engine::Eviction

  def teardown
    close_socket_connections
  end

  def test_the_longest_idle_go_first
    conns = Array.new(16) { served }
    assert_equal conns.first(2), Eviction.pick(conns)
  end

  def test_a_connection_mid_request_is_never_picked
    busy, client = socket_connection(served: true)
    client.write("GET / HTTP/1.1\r\n")
    busy.read_nonblock
    busy.advance
    idle = served

    assert_equal [idle], Eviction.pick([busy, idle])
  end

  def test_a_connection_whose_client_has_sent_unread_bytes_is_skipped
    spoken, client = socket_connection(served: true)
    client.write(REQUEST) # not read yet: closing would fail it
    quiet = served

    assert_equal [quiet], Eviction.pick([spoken, quiet])
    refute Eviction.closable?(spoken)
  end

  def test_a_keep_alive_connection_counts_from_the_end_of_its_last_response
    again, client = socket_connection(served: true)
    other = served
    serve_one(again, client) # idle again, from now: younger than other

    assert_equal [other], Eviction.pick([again, other])
  end

  def test_a_connection_whose_client_left_may_go
    gone, client = socket_connection(served: true)
    client.close
    assert_equal [gone], Eviction.pick([gone, served])
  end

  # Accepted, and its first request not read yet: the request is likely on
  # its way, and its client has nothing to retry on.
  def test_a_new_connection_is_kept_while_its_first_request_may_be_on_its_way
    fresh, = socket_connection
    assert_empty Eviction.pick([fresh])
    refute Eviction.closable?(fresh)
  end

  # A client that connects and sends nothing does not hold a slot until the
  # keep-alive timeout, but goes only after every keep-alive connection,
  # however long those have been idle.
  def test_a_new_connection_silent_past_the_grace_goes_after_keep_alive_ones
    now = Spindle::Engine::Timeouts.now
    silent, = socket_connection(idle_since: now - Eviction::FIRST_REQUEST_GRACE - 1)
    keep_alive = served

    assert_equal [keep_alive], Eviction.pick([silent, keep_alive], now)
    assert_equal [silent], Eviction.pick([silent], now)
  end

  def test_nothing_idle_picks_nothing
    assert_empty Eviction.pick([])
  end

  private

  def served = socket_connection(served: true).first
end
