# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Expect: 100-continue (RFC 9110 §10.1.1): the client sends the head, waits
# for "100 Continue", and only then sends the body. A server that waits for
# the body before answering deadlocks with such a client; the read deadline
# turns that deadlock into a failure.
class ExpectContinueTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_100_continue_arrives_before_the_body_is_sent
    connection = connect
    connection.write(request("POST", "/continue", [["Expect", "100-continue"], ["Content-Length", "11"]]))
    interim = connection.read_response(interim: false)
    assert_equal 100, interim.status, "expected 100 Continue before sending the body, got:\n#{interim}"
    assert_equal "1.1", interim.version

    connection.write("hello world")
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "hello world", JSON.parse(response.body)["body"]
    assert_empty response.interim, "only one 100 Continue should be sent"
  end

  def test_100_continue_with_a_chunked_body
    connection = connect
    connection.write(request("POST", "/continue-chunked", [["Expect", "100-continue"], ["Transfer-Encoding", "chunked"]]))
    assert_equal 100, connection.read_response(interim: false).status
    connection.write(HttpClient.chunked("chunk", "ed"))
    assert_equal "chunked", JSON.parse(connection.read_response.body)["body"]
  end

  def test_connection_stays_usable_after_a_100_continue_exchange
    connection = connect
    connection.write(request("POST", "/c1", [["Expect", "100-continue"], ["Content-Length", "3"]]))
    assert_equal 100, connection.read_response(interim: false).status
    connection.write("abc")
    assert_equal "abc", JSON.parse(connection.read_response.body)["body"]

    connection.write(request("GET", "/c2"))
    response = connection.read_response
    assert_equal "/c2", JSON.parse(response.body)["path"]
    assert_empty response.interim, "no 100 Continue for a request that did not ask for one"
  end

  def test_client_that_sends_the_body_anyway_gets_one_final_response
    connection = connect
    connection.write(request("POST", "/eager", [["Expect", "100-continue"]], body: "eager"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "eager", JSON.parse(response.body)["body"]
    assert response.interim.all? { |interim| interim.status == 100 }
  end

  def test_http_1_0_expectation_is_ignored
    # RFC 9110 §10.1.1: a server MUST ignore 100-continue in an HTTP/1.0 request,
    # and §15.2: it MUST NOT send a 1xx to an HTTP/1.0 client.
    connection = connect
    connection.write(request("POST", "/ten", [["Expect", "100-continue"]], body: "ten", version: "1.0"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_empty response.interim, "no 1xx may be sent to an HTTP/1.0 client:\n#{response.interim.map(&:to_s).join}"
    assert_equal "ten", JSON.parse(response.body)["body"]
  end
end
