# frozen_string_literal: true

require_relative "../support/spindle_process"

# An app that raises: before the response (a 500 that gives nothing away) and
# in the middle of a streamed body (too late for a 500: the response must be
# cut short so the client cannot mistake it for a complete one).
class AppExceptionTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_exception_becomes_a_500_without_a_backtrace
    response = roundtrip(request("GET", "/raise"))
    assert_equal 500, response.status
    refute_match(/\.(ru|rb):\d+/, response.body, "no backtrace in the response")
    refute_includes response.body, "spindle-test-boom", "the exception message stays in the log"
    assert_operator response.body.bytesize, :<=, 1024, "a short body"
    assert_equal response.body.bytesize.to_s, response["content-length"]
  end

  def test_exception_is_logged_to_stderr
    roundtrip(request("GET", "/raise"))
    assert server.wait_for_output(/spindle-test-boom: the app failed on purpose/),
           "the error should be logged; server printed:\n#{server.output}"
    assert_includes server.stderr, "spindle-test-boom"
  end

  def test_server_keeps_serving_after_exceptions
    3.times { assert_equal 500, roundtrip(request("GET", "/raise")).status }
    assert_still_serving
  end

  def test_keep_alive_connection_is_usable_or_closed_cleanly_after_a_500
    connection = connect
    connection.write(request("GET", "/raise"))
    response = connection.read_response
    assert_equal 500, response.status
    if response.close?
      assert_equal "", assert_closed_by_server(connection)
    else
      connection.write(request("GET", "/after-500"))
      assert_equal 200, connection.read_response.status
    end
  end

  def test_exception_mid_stream_cuts_the_response_short_and_closes_the_body
    closed = rendezvous
    connection = connect
    connection.write(request("GET", "/stream?fail=1&closed=#{closed.path}"))
    head = connection.read_head
    assert_equal 200, head.status
    assert_equal "chunk-0\n", connection.read_chunk
    rest = connection.read_until_eof
    refute_includes rest, "0\r\n\r\n", "a failed body must not end with a last-chunk, the client would take it as complete"
    closed.await("closed")
    assert_still_serving
  end

  # Issue 11, the request log: it says what the client got, a 500, not the
  # invalid status the app returned.
  def test_request_log_shows_the_500_sent_for_an_invalid_status
    logging = spawn_server("--log-requests", "-b", LOOPBACK, app_path("all"))
    assert_equal 500, roundtrip(request("GET", "/raw_status/999"), logging).status
    assert logging.wait_for_output(%r{"GET /raw_status/999 HTTP/1.1" 500 }), logging.output
    refute_match(/" 999 /, logging.stdout)
  end
end
