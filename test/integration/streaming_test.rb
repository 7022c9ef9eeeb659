# frozen_string_literal: true

require_relative "../support/spindle_process"

# Bodies of unknown length: chunked on HTTP/1.1, close-delimited on HTTP/1.0.
# The gate makes the app stop after its first chunk until the test has read
# that chunk, which shows the server streams instead of buffering the body.
class StreamingTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_http_1_1_streams_chunked
    response = roundtrip(request("GET", "/stream?count=3"))
    assert_equal 200, response.status
    assert_equal :chunked, response.framing, "a body of unknown length on 1.1 is chunked:\n#{response}"
    assert_nil response["content-length"]
    assert_equal "chunk-0\nchunk-1\nchunk-2\nchunk-3\n", response.body
  end

  def test_first_chunk_reaches_the_client_while_the_app_is_still_producing
    gate = rendezvous
    connection = connect
    connection.write(request("GET", "/stream?count=1&gate=#{gate.path}"))
    head = connection.read_head
    assert_equal 200, head.status
    assert_equal "chunked", head["transfer-encoding"]
    assert_equal "chunk-0\n", connection.read_chunk, "the first chunk must be on the wire before the body finishes"
    gate.await("entered").release
    assert_equal "chunk-1\n", connection.read_chunk
    assert_nil connection.read_chunk, "the body ends with the last-chunk"
  end

  def test_connection_is_reusable_after_a_chunked_response
    connection = connect
    connection.write(request("GET", "/stream?count=1"))
    assert_equal "chunk-0\nchunk-1\n", connection.read_response.body
    connection.write(request("GET", "/stream?count=0"))
    assert_equal "chunk-0\n", connection.read_response.body
  end

  def test_http_1_0_streams_close_delimited
    connection = connect
    connection.write(request("GET", "/stream?count=2", version: "1.0"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_nil response["transfer-encoding"], "HTTP/1.0 clients do not understand chunked:\n#{response}"
    assert_nil response["content-length"]
    assert_equal :close, response.framing
    assert_equal "chunk-0\nchunk-1\nchunk-2\n", response.body
  end

  def test_http_1_0_keep_alive_request_still_gets_a_close_delimited_stream
    connection = connect
    connection.write(request("GET", "/stream?count=1", [["Connection", "keep-alive"]], version: "1.0"))
    response = connection.read_response
    assert_nil response["transfer-encoding"]
    assert_equal "chunk-0\nchunk-1\n", response.body, "without a length the body can only end with the connection"
    assert connection.eof?
  end

  def test_rack_3_callable_streaming_body
    connection = connect
    connection.write(request("GET", "/stream?count=2&style=call"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "chunk-0\nchunk-1\nchunk-2\n", response.body
  end

  def test_body_close_is_called_after_streaming
    closed = rendezvous
    response = roundtrip(request("GET", "/stream?count=1&closed=#{closed.path}"))
    assert_equal "chunk-0\nchunk-1\n", response.body
    closed.await("closed")
  end
end
