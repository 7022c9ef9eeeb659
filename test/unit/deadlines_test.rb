# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/engine/outbox"
require "spindle/engine/deadlines"

# Engine::Deadlines: the one deadline a connection has at a time, and the one
# question the selector's scan and the fiber engines' sweeper both ask
# (#expired?). Real Connections over real socket pairs.
class DeadlinesTest < Minitest::Test
  NOW = 1000.0

  def setup
    @config = Spindle::Config.new(keepalive_timeout: 7, header_timeout: 3, read_timeout: 5, write_timeout: 11)
    @deadlines = Spindle::Engine::Deadlines.new(@config)
    @pairs = []
  end

  def teardown
    @pairs.each { |client, conn| client.close; conn.close }
  end

  def test_idle_connections_get_the_keep_alive_timeout
    conn = connection
    assert_equal NOW + 7, @deadlines.renew(conn, NOW)
  end

  def test_a_head_under_way_keeps_its_first_deadline
    conn = connection
    client_of(conn).write("GET / HTTP/1.1\r\n")
    conn.read_nonblock
    conn.advance
    assert_equal NOW + 3, @deadlines.renew(conn, NOW)
    assert_equal NOW + 3, @deadlines.renew(conn, NOW + 2), "a head trickled in must not push its deadline"
  end

  def test_output_owed_gets_the_write_timeout
    conn = connection
    conn.write("x" * (8 * 1024 * 1024), true) # more than the socket pair takes
    assert_predicate conn.outbox, :pending?
    assert_equal NOW + 11, @deadlines.renew(conn, NOW)
  end

  def test_expired_past_the_deadline
    conn = connection
    @deadlines.renew(conn, NOW)
    refute @deadlines.expired?(conn, NOW + 6, false)
    assert @deadlines.expired?(conn, NOW + 7, false)
  end

  def test_when_draining_a_fresh_connection_is_kept_and_a_served_idle_one_goes
    fresh = connection
    served = connection
    client_of(served).write("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    served.read_nonblock
    assert_equal :complete, served.advance
    served.finish_request_env
    served.reset_for_next_request
    [fresh, served].each { |conn| @deadlines.renew(conn) }
    later = Spindle::Engine::Deadlines.now + Spindle::Engine::Deadlines::DRAIN_IDLE

    refute @deadlines.expired?(fresh, later, true), "its first request is on its way"
    refute @deadlines.expired?(served, later, false), "not draining: the keep-alive timeout applies"
    assert @deadlines.expired?(served, later, true)
  end

  private

  def connection
    client, server = UNIXSocket.pair
    conn = Spindle::Connection.new(server, @config, {}, Spindle::Engine::Outbox.new(server, @config))
    @pairs << [client, conn]
    conn
  end

  def client_of(conn) = @pairs.find { |_, c| c.equal?(conn) }.first
end
