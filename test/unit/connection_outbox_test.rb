# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/connection"

# Connection#write with defer_writes: what the socket does not take waits in
# the outbox, in order, until #flush_nonblock writes it; nothing waits for the
# client on the writing thread. Real socket pairs, no stand-ins.
class ConnectionOutboxTest < Minitest::Test
  BIG = 8 * 1024 * 1024 # more than a UNIX socket pair buffers

  def setup
    @client, server = UNIXSocket.pair
    @conn = Spindle::Connection.new(server, nil, Spindle::Config.new({}), {}, defer_writes: true)
  end

  def teardown
    @client.close
    @conn.close
  end

  def test_a_held_body_the_client_does_not_read_waits_in_the_outbox
    parts = %w[a b c].map { |byte| byte * BIG }
    parts.each { |part| @conn.write(part, true) }

    assert_predicate @conn, :pending_output?
    assert_equal parts.join, read_while_flushing(parts.sum(&:bytesize))
    refute_predicate @conn, :pending_output?
  end

  def test_small_output_waits_behind_the_outbox_in_order
    @conn.write("x" * BIG, true)
    @conn.write(+"tail")

    assert_equal "#{'x' * BIG}tail", read_while_flushing(BIG + 4)
  end

  def test_the_app_may_reuse_its_buffer_after_a_write
    @conn.write("x" * BIG, true)
    buffer = +"first"
    @conn.write(buffer)
    buffer.replace("later")

    assert_equal "#{'x' * BIG}first", read_while_flushing(BIG + 5)
  end

  def test_a_client_that_is_gone_ends_the_flush
    @conn.write("x" * BIG, true)
    @client.close

    assert_equal :eof, @conn.flush_nonblock
  end

  private

  # Reads size bytes from the client side, flushing whenever the server side
  # can write; bounded by the number of rounds, not by time.
  def read_while_flushing(size)
    received = +""
    10_000.times do
      return received if received.bytesize >= size && @conn.flush_nonblock == :done

      @conn.flush_nonblock
      received << @client.read_nonblock(1024 * 1024, exception: false).then { |got| got.is_a?(String) ? got : "" }
    end
    flunk "only #{received.bytesize} of #{size} bytes arrived"
  end
end
