# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Clients that go away at every stage: in the head, in the body, while the
# app runs, while the response streams. The server must not crash, must call
# body.close, and must keep serving. (The teardown fails any test during which
# the shared server died.)
class ClientDisconnectTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_disconnect_in_the_middle_of_the_head
    connection = connect
    connection.write("GET /half-a-head HTTP/1.1\r\nHost: a\r\nX-Par")
    connection.close
    assert_still_serving
  end

  def test_reset_in_the_middle_of_the_head
    connection = connect
    connection.write("GET /half-a-head HTTP/1.1\r\nHost: a\r\nX-Par")
    connection.reset!
    assert_still_serving
  end

  def test_disconnect_in_the_middle_of_the_body_never_calls_the_app
    connection = connect
    connection.write(request("POST", "/half-a-body-4c1d", [["Content-Length", "100"]]) + "only part of it")
    connection.close
    assert_still_serving
    refute app_saw?("half-a-body-4c1d"), "the app was called with a truncated body"
  end

  def test_disconnect_in_the_middle_of_a_chunked_body
    connection = connect
    connection.write(request("POST", "/half-chunked-9e2b", [["Transfer-Encoding", "chunked"]]) + "5\r\nhel")
    connection.reset!
    assert_still_serving
    refute app_saw?("half-chunked-9e2b"), "the app was called with a truncated body"
  end

  def test_disconnect_while_the_app_is_running
    gate = rendezvous
    connection = connect
    connection.write(request("GET", "/gate?path=#{gate.path}"))
    visit = gate.await("entered")
    connection.reset!
    visit.release
    assert_still_serving
  end

  def test_disconnect_mid_response_closes_the_body_and_frees_the_server
    gate = rendezvous
    closed = rendezvous
    connection = connect
    connection.write(request("GET", "/stream?endless=1&gate=#{gate.path}&closed=#{closed.path}"))
    assert_equal 200, connection.read_head.status
    assert_equal "chunk-0\n", connection.read_chunk
    connection.reset!
    gate.await("entered").release
    closed.await("closed", deadline: 30)
    assert_still_serving
  end

  def test_disconnect_before_reading_pipelined_responses
    connection = connect
    connection.write(request("GET", "/stream?count=1") + request("POST", "/x", body: "y" * 10))
    connection.close
    assert_still_serving
  end

  def test_no_state_leaks_into_the_next_request_after_a_disconnect
    connection = connect
    connection.write(request("POST", "/leak", [["Content-Length", "50"], ["X-Leak", "yes"]]) + "partial")
    connection.close
    response = roundtrip(request("GET", "/clean"))
    echoed = JSON.parse(response.body)
    assert_equal "/clean", echoed["path"]
    refute echoed["headers"].key?("HTTP_X_LEAK"), "a field from the abandoned request leaked: #{echoed['headers']}"
    assert_equal "", echoed["body"]
  end
end
