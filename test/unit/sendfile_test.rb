# frozen_string_literal: true

require "test_helper"
require "socket"
require "tempfile"
require "spindle/http/file_body"

# HTTP::FileBody.sendfile (ext/spindle/sendfile.c): sendfile(2) from a file's
# own position to a non-blocking socket, as FileBody#send_nonblock calls it.
# Real files and socket pairs.
class SendfileTest < Minitest::Test
  FileBody = Spindle::HTTP::FileBody
  SIZE = 8 * 1024 * 1024 # more than a socket pair buffers

  def setup
    skip "sendfile(2) is Linux's" unless RUBY_PLATFORM.include?("linux")
    @bytes = Random.new(2).bytes(SIZE)
    @tempfile = Tempfile.new("sendfile")
    @tempfile.binmode
    @tempfile.write(@bytes)
    @tempfile.flush
    @file = File.open(@tempfile.path, "rb")
    @client, @server = UNIXSocket.pair
  end

  def teardown
    [@file, @client, @server].each { |io| io&.close unless io&.closed? }
    @tempfile&.close!
  end

  def test_the_extension_is_what_file_bodies_use
    assert FileBody::SENDFILE, "FileBody falls back to copying on Linux with the extension built"
  end

  def test_sends_from_the_files_position_and_moves_it
    @file.seek(100)
    assert_equal 1000, FileBody.sendfile(@server.fileno, @file.fileno, 1000)
    assert_equal 1100, @file.pos
    assert_equal @bytes.byteslice(100, 1000), @client.read(1000)
  end

  # A full socket: part of what was asked, then :wait_writable (EAGAIN), not
  # a wait; once the client reads, the rest.
  def test_a_full_socket_takes_part_then_asks_to_wait
    first = FileBody.sendfile(@server.fileno, @file.fileno, SIZE)
    assert_kind_of Integer, first
    assert_operator first, :<, SIZE, "a socket pair took #{SIZE} bytes at once"
    assert_equal first, @file.pos
    assert_equal :wait_writable, FileBody.sendfile(@server.fileno, @file.fileno, SIZE - first)
    assert_equal first, @file.pos, "a refused call moved the file"

    assert_equal @bytes, read_while_sending(SIZE - first, first)
  end

  def test_the_end_of_the_file_sends_nothing
    @file.seek(SIZE)
    assert_equal 0, FileBody.sendfile(@server.fileno, @file.fileno, 10)
  end

  def test_a_client_gone_raises_the_errno
    @client.close
    error = assert_raises(Errno::EPIPE) { FileBody.sendfile(@server.fileno, @file.fileno, 10) }
    assert_match(/sendfile/, error.message)
  end

  def test_a_descriptor_that_is_no_file_raises_the_errno
    assert_raises(Errno::EINVAL) { FileBody.sendfile(@server.fileno, @client.fileno, 10) }
    assert_raises(Errno::EBADF) { FileBody.sendfile(-1, @file.fileno, 10) }
  end

  def test_a_negative_count_is_refused
    assert_raises(ArgumentError) { FileBody.sendfile(@server.fileno, @file.fileno, -1) }
  end

  # FileBody#send_nonblock over a full socket: :wait, then :done once read.
  def test_send_nonblock_waits_and_finishes
    body = FileBody.new(@file, SIZE)
    assert_equal :wait, body.send_nonblock(@server)
    assert_operator body.remaining, :<, SIZE
    received = +""
    until body.send_nonblock(@server) == :done
      received << @client.read_nonblock(SIZE, exception: false).then { |data| data.is_a?(String) ? data : "" }
    end
    received << @client.read(SIZE - received.bytesize)
    assert_equal @bytes, received
    assert_predicate @file, :closed?
  end

  private

  # Reads all of the file through the client while sending what is left.
  def read_while_sending(left, already)
    received = @client.read(already)
    while left.positive?
      sent = FileBody.sendfile(@server.fileno, @file.fileno, left)
      left -= sent if sent.is_a?(Integer)
      received << @client.read_nonblock(SIZE, exception: false).then { |data| data.is_a?(String) ? data : "" }
    end
    received << @client.read(SIZE - received.bytesize) if received.bytesize < SIZE
    received
  end
end
