# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/request/handler"
require "spindle/request/connection"
require "spindle/engine/outbox"
require "spindle/engine/deadlines"
require "spindle/engine/timeouts"
require "spindle/engine/selection"
require "spindle/engine/lingering_close"

# Engine::LingeringClose: when a close lingers, what it drops, and where it
# ends; and the two ways into it that are not a response's outcome: a 408
# (Timeouts.expire) and the selector engines' Selection#retire. Real
# Connections over real socket pairs; the engines' end to end behaviour is
# test/integration/lingering_close_test.rb's.
class LingeringCloseUnitTest < Minitest::Test
  LingeringClose = Spindle::Engine::LingeringClose
  REQUEST = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

  def setup
    @config = Spindle::Config.new({})
    log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @writer = Spindle::Handler.new(->(_env) { [200, {}, []] }, @config, log, multithread: false).writer
    @deadlines = Spindle::Engine::Deadlines.new(@config)
    @client, server = UNIXSocket.pair
    @conn = Spindle::Connection.new(server, @config, {}, Spindle::Engine::Outbox.new(server, @config))
    @connections = Spindle::Engine::Connections.new
    @connections.add(@conn)
  end

  def teardown
    @client.close unless @client.closed?
    @conn.close
  end

  def test_a_client_that_sends_nothing_more_is_closed_at_once
    serve(REQUEST)
    assert_equal :close, LingeringClose.start(@conn)
    refute_predicate @conn, :lingering?
  end

  def test_pipelined_input_makes_the_close_linger_until_the_client_closes
    serve(REQUEST * 3)
    assert_equal :linger, LingeringClose.start(@conn)
    assert_predicate @conn, :lingering?
    assert_nil read_from_server, "the client should read the end of stream: the write side is shut down"

    @client.write("more pipelined bytes")
    assert_equal :linger, drain_when_readable
    @client.close
    assert_equal :close, drain_when_readable
  end

  def test_a_refused_request_lingers_with_nothing_unread
    @client.write("GET / HTTP/1.1\r\n")
    read_some
    @conn.refused!
    assert_equal :linger, LingeringClose.start(@conn)
  end

  def test_its_deadline_is_the_idle_bound_within_the_longest
    serve(REQUEST * 2)
    started = Spindle::Engine::Deadlines.now
    assert_equal :linger, LingeringClose.start(@conn)
    assert_operator @conn.marks.at, :<=, Spindle::Engine::Deadlines.now + LingeringClose::IDLE
    assert_operator @conn.marks.at, :<=, started + LingeringClose::MAX + LingeringClose::IDLE
    assert_operator @conn.linger_ends, :<=, Spindle::Engine::Deadlines.now + LingeringClose::MAX
  end

  def test_a_client_that_keeps_sending_is_cut_off_after_the_byte_bound
    serve(REQUEST * 2)
    assert_equal :linger, LingeringClose.start(@conn)
    writer = Thread.new do
      @client.write("z" * (LingeringClose::BYTES + (1024 * 1024)))
    rescue Errno::EPIPE, Errno::ECONNRESET, IOError
      nil
    end
    state = :linger
    state = drain_when_readable while state == :linger
    assert_equal :close, state
    @conn.close
    writer.join(10)
  end

  def test_wait_is_false_once_the_deadline_passed
    serve(REQUEST * 2)
    assert_equal :linger, LingeringClose.start(@conn)
    @conn.marks.at = Spindle::Engine::Deadlines.now - 1
    refute LingeringClose.wait(@conn)
  end

  def test_a_408_hands_the_connection_on_to_linger
    @client.write("GET / HTTP/1.1\r\nHost: x\r\n")
    read_some
    assert_equal :incomplete, @conn.advance
    retired = []
    Spindle::Engine::Timeouts.expire(@conn, @writer, @connections, ->(conn) { retired << conn })
    assert_equal [@conn], retired
    assert_predicate @conn, :refused?
    assert_match %r{\AHTTP/1.1 408 }, read_from_server
  end

  def test_a_lingering_connection_past_its_deadline_is_closed_without_a_408
    serve(REQUEST * 2)
    assert_equal :linger, LingeringClose.start(@conn)
    Spindle::Engine::Timeouts.expire(@conn, @writer, @connections,
                                     ->(_conn) { flunk "a lingering connection lingers no more" })
    assert_predicate @conn.io, :closed?
    assert_nil read_from_server
  end

  def test_the_selection_watches_a_close_that_lingers_until_it_ends
    selection = Spindle::Engine::Selection.new([], @writer, @deadlines, @connections)
    serve(REQUEST * 2)
    selection.watch(@conn)
    selection.retire(@conn)
    assert_equal 1, selection.size, "a lingering connection counts towards the cap"
    assert_equal 1, @connections.count, "a lingering connection is open"

    @client.close
    selection.select(5) { |conn| selection.linger_on(conn) }
    assert_predicate selection, :empty?
    assert_predicate @conn.io, :closed?
    assert_equal 0, @connections.count
  ensure
    selection&.close
  end

  private

  # Reads and serves the first request of what the client sent.
  def serve(bytes)
    @client.write(bytes)
    read_some
    assert_equal :complete, @conn.advance
    @conn.finish_request_env
  end

  def read_some
    assert @conn.io.wait_readable(5), "the client's bytes should arrive"
    assert_equal :data, @conn.read_nonblock
  end

  def read_from_server
    assert @client.wait_readable(5), "the server side should send something or close"
    @client.read_nonblock(64 * 1024, exception: false)
  end

  def drain_when_readable
    assert LingeringClose.wait(@conn), "the client's bytes or end of stream should arrive"
    LingeringClose.drain(@conn)
  end
end
