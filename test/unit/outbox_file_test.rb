# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "tempfile"
require "spindle/config"
require "spindle/engine/outbox"
require "spindle/engine/output_budget"

# A file body in Engine::Outbox (HTTP::FileBody): what the socket does not
# take waits as the open file, counted at FileBody::COST in the output
# budget (not at its size), and goes out as the client reads; the outbox
# closes the file. Real socket pairs and files, no stand-ins.
class OutboxFileTest < Minitest::Test
  SIZE = 8 * 1024 * 1024 # more than a socket pair buffers
  COST = Spindle::HTTP::FileBody::COST

  def setup
    @config = Spindle::Config.new({})
    @budget = Spindle::Engine::OutputBudget.for(@config)
    @bytes = Random.new(1).bytes(SIZE)
    @tempfile = Tempfile.new("outbox-file")
    @tempfile.binmode
    @tempfile.write(@bytes)
    @tempfile.flush
  end

  def teardown
    @tempfile.close!
  end

  # TCP: sendfile(2); a UNIX socket pair: the same, it is a BasicSocket too.
  def test_a_file_the_client_does_not_read_waits_as_the_file
    each_socket_pair do |client, server|
      outbox = Spindle::Engine::Outbox.new(server, @config)
      held = @budget.held
      file = File.open(@tempfile.path, "rb")
      outbox.write_file(file, SIZE)

      assert_predicate outbox, :pending?
      assert_equal held + COST, @budget.held, "a waiting file counts its cost, not its size"
      assert_equal @bytes, read_while_flushing(client, outbox, SIZE)
      refute_predicate outbox, :pending?
      assert_predicate file, :closed?
      assert_equal held, @budget.held
    end
  end

  # An io sendfile is not used for (a TLS socket; here a pipe): the copy
  # through one buffer, stepping back over what the io did not take.
  def test_the_copy_fallback_sends_the_same_bytes
    reader, writer = IO.pipe
    outbox = Spindle::Engine::Outbox.new(writer, @config)
    outbox.write_file(File.open(@tempfile.path, "rb"), SIZE)
    assert_equal @bytes, read_while_flushing(reader, outbox, SIZE)
  ensure
    reader.close
    writer.close
  end

  def test_a_file_shorter_than_its_length_fails_the_write
    each_socket_pair do |client, server|
      outbox = Spindle::Engine::Outbox.new(server, @config)
      outbox.write_file(File.open(@tempfile.path, "rb"), SIZE + 1)
      reader = Thread.new { client.read(SIZE) }
      assert_raises(Spindle::HTTP::FileBody::Truncated) { outbox.flush }
      assert_equal @bytes, reader.value
      outbox.drop
    end
  end

  def test_dropping_a_waiting_file_closes_it_and_gives_back_its_cost
    each_socket_pair do |_client, server|
      outbox = Spindle::Engine::Outbox.new(server, @config)
      held = @budget.held
      file = File.open(@tempfile.path, "rb")
      outbox.write_file(file, SIZE)
      outbox.drop
      assert_predicate file, :closed?
      assert_equal held, @budget.held
    end
  end

  private

  def each_socket_pair
    [UNIXSocket.pair, tcp_pair].each do |client, server|
      yield client, server
    ensure
      client.close
      server.close
    end
  end

  def tcp_pair
    listener = TCPServer.new("127.0.0.1", 0)
    client = TCPSocket.new("127.0.0.1", listener.addr[1])
    [client, listener.accept]
  ensure
    listener&.close
  end

  def read_while_flushing(client, outbox, size)
    got = String.new(encoding: Encoding::BINARY)
    while got.bytesize < size
      outbox.flush_nonblock
      chunk = client.read_nonblock(1 << 20, exception: false)
      got << chunk if chunk.is_a?(String)
    end
    got
  end
end
