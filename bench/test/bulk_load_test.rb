# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require_relative "../lib/bench/bulk_load"

# The big-body client against a small real server on 127.0.0.1 whose
# answers each test picks: a whole body must be read to its last byte
# before the next request goes out, and what cannot be framed is an error.
class BulkLoadTest < Minitest::Test
  BODY = ("x\xFF".b * (3 << 20)).freeze # 6 MB, not ASCII: more than one read's worth (4 MB)

  def setup
    @listener = TCPServer.new("127.0.0.1", 0)
    @served = Queue.new
  end

  def teardown
    @server&.kill&.join
    @listener.close
  end

  def test_reads_every_body_whole_over_one_connection_each
    serve { |_| "HTTP/1.1 200 OK\r\nContent-Length: #{BODY.bytesize}\r\n\r\n#{BODY}" }
    result = load(connections: 2).run
    assert_operator result.requests, :>=, 2
    assert_equal @served.size, result.requests, "each request's response was read whole before the next went out"
    assert_equal [0, {}], [result.bad_status, result.errors]
  end

  def test_counts_a_status_of_400_or_more
    serve { |_| "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno" }
    result = load.run
    assert_operator result.requests, :>=, 1
    assert_equal result.requests, result.bad_status
  end

  def test_a_body_with_no_content_length_is_an_error_not_a_response
    serve { |_| "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n" }
    result = load.run
    assert_equal [0, 1], [result.requests, result.errors[:read]]
  end

  def test_opens_a_new_connection_when_the_server_closes_after_a_response
    serve(close: true) { |_| "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi" }
    result = load.run
    assert_operator result.requests, :>=, 2
    assert_equal [@served.size, {}], [result.requests, result.errors]
  end

  def test_a_connection_closed_mid_body_is_an_error
    serve(close: true) { |_| "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf" }
    result = load.run
    assert_equal [0, 1], [result.requests, result.errors[:read]]
  end

  private

  def load(connections: 1)
    Bench::BulkLoad.new(port: @listener.addr[1], path: "/big", connections: connections, seconds: 0.3,
                        server_pid: Process.pid, read_timeout: 5)
  end

  # Answers each request head on each connection with the block's response;
  # close: hangs up after the first.
  def serve(close: false, &answer)
    @server = Thread.new do
      loop do
        client = @listener.accept
        Thread.new(client) { |c| converse(c, close, answer) }
      end
    end
  end

  def converse(client, close, answer)
    while (head = client.gets("\r\n\r\n"))
      @served << head
      client.write(answer.call(head))
      break if close
    end
  rescue IOError, SystemCallError
    nil
  ensure
    client.close
  end
end
