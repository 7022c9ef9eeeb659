# frozen_string_literal: true

require "minitest/autorun"
require "objspace"
require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/engine/outbox"

# A closed connection gives its read buffer back at once, not at the next GC:
# with a connection per request, 16 KiB each would otherwise count towards
# Ruby's malloc figures until a sweep frees them (more GCs, and majors by
# "oldmalloc" in a reforked worker). Real socket pair, real reads.
class ConnectionCloseTest < Minitest::Test
  def setup
    @client, server = UNIXSocket.pair
    @conn = Spindle::Connection.new(server, config = Spindle::Config.new({}), {},
                                    Spindle::Engine::Outbox.new(server, config))
  end

  def teardown
    @client.close unless @client.closed?
  end

  def test_close_frees_the_read_buffer
    @client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_equal :data, read_until_data
    assert_operator buffer_bytes, :>=, Spindle::Connection::READ_SIZE

    @conn.close

    assert_operator buffer_bytes, :<, 1024
    assert_predicate @conn.io, :closed?
  end

  private

  def buffer_bytes = ObjectSpace.memsize_of(@conn.instance_variable_get(:@buffer))

  # The bytes are already in the socket pair; a few tries at most.
  def read_until_data
    10.times do
      got = @conn.read_nonblock
      return got unless got == :wait

      @conn.io.wait_readable(1)
    end
    :wait
  end
end
