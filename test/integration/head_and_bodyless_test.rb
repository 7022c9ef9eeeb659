# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Responses that have no body on the wire (RFC 9110 §6.4.1, §9.3.2, §15.3.5,
# §15.4.5): HEAD keeps the content-length a GET would get and sends no bytes;
# 204, 205 and 304 send no body; a 1xx is never a final response. Each test follows up on the same connection: a
# stray body would be read as the start of the next response.
class HeadAndBodylessTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_head_keeps_content_length_and_sends_no_body
    connection = connect
    connection.write(request("HEAD", "/status/"))
    head = connection.read_response(head: true)
    assert_equal 200, head.status
    assert_equal "12", head["content-length"], "HEAD keeps the length a GET would have:\n#{head}"
    assert_nil head["transfer-encoding"]
    assert_next_response_is_clean(connection)
  end

  def test_head_to_an_app_that_returns_a_body_still_sends_none
    connection = connect
    connection.write(request("HEAD", "/raw_status/200"))
    head = connection.read_response(head: true)
    assert_equal 200, head.status
    assert_equal "27", head["content-length"]
    assert_next_response_is_clean(connection)
  end

  def test_head_to_a_streaming_body_sends_no_chunks
    connection = connect
    connection.write(request("HEAD", "/stream?count=3"))
    head = connection.read_response(head: true)
    assert_equal 200, head.status
    assert_next_response_is_clean(connection)
  end

  def test_204_has_no_body_and_no_framing
    connection = connect
    connection.write(request("GET", "/status/204"))
    response = connection.read_response
    assert_equal 204, response.status
    assert_equal "204", response["x-status"]
    assert_nil response["content-length"], "RFC 9110 §8.6: no content-length in a 204:\n#{response}"
    assert_nil response["transfer-encoding"], "RFC 9112 §6.1: no transfer-encoding in a 204:\n#{response}"
    assert_next_response_is_clean(connection)
  end

  def test_304_has_no_body
    connection = connect
    connection.write(request("GET", "/status/304"))
    response = connection.read_response
    assert_equal 304, response.status
    assert_equal '"v1"', response["etag"]
    assert_nil response["transfer-encoding"], "RFC 9112 §6.1: no transfer-encoding in a 304:\n#{response}"
    assert_next_response_is_clean(connection)
  end

  def test_204_and_304_from_an_app_that_returns_a_body_send_none
    connection = connect
    %w[204 304].each do |status|
      connection.write(request("GET", "/raw_status/#{status}"))
      response = connection.read_response
      assert_equal Integer(status), response.status
      assert_nil response["transfer-encoding"]
    end
    assert_next_response_is_clean(connection)
  end

  # Issue 11, item 13: an app that returns a 1xx other than 101 as its final
  # status. Sent as such, the client would wait on for the final response and
  # take the next request's 202 as this one's.
  def test_informational_final_status_is_a_500_that_closes_the_connection
    %w[100 102 103].each do |status|
      connection = connect
      connection.write(request("GET", "/raw_status/#{status}") + request("GET", "/raw_status/202"))
      response = connection.read_response(interim: false)
      assert_equal 500, response.status, "status #{status} is not a final status:\n#{response}"
      assert response.close?, "the connection closes after the 500:\n#{response}"
      assert_equal "", assert_closed_by_server(connection), "no 202 may follow: it answers nothing the client waits for"
      assert server.wait_for_output(%r{invalid response to GET /raw_status/#{status} \(no request id\): status #{status} is informational}),
             server.output
    end
  end

  # Issue 11, item 15: RFC 9110 §15.3.6, a 205 sends no content, whatever the
  # app returned.
  def test_205_from_an_app_that_returns_a_body_sends_none
    connection = connect
    connection.write(request("GET", "/raw_status/205"))
    response = connection.read_response
    assert_equal 205, response.status
    assert_equal "0", response["content-length"], "a 205 declares no content:\n#{response}"
    assert_equal "", response.body
    assert_next_response_is_clean(connection)
  end

  private

  def assert_next_response_is_clean(connection)
    connection.write(request("GET", "/next-after-bodyless"))
    following = connection.read_response
    assert_equal 200, following.status, "the next response is garbled, a body was sent where none belongs"
    assert_equal "/next-after-bodyless", JSON.parse(following.body)["path"]
  end
end
