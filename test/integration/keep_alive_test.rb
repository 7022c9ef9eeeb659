# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Persistent connections (RFC 9112 §9.3): HTTP/1.1 keeps the connection open
# unless someone says close; HTTP/1.0 only when the client asks for it.
class KeepAliveTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_http_1_1_serves_several_requests_on_one_connection
    connection = connect
    5.times do |i|
      connection.write(request("GET", "/keep-alive/#{i}"))
      response = connection.read_response
      assert_equal 200, response.status
      assert_equal "/keep-alive/#{i}", JSON.parse(response.body)["path"]
      refute response.close?, "request #{i}: the server should keep an HTTP/1.1 connection open:\n#{response}"
    end
  end

  def test_requests_with_bodies_keep_the_connection_usable
    connection = connect
    %w[first second third].each do |text|
      connection.write(request("POST", "/keep-alive/post", [["Content-Type", "text/plain"]], body: text))
      response = connection.read_response
      assert_equal 200, response.status
      assert_equal text, JSON.parse(response.body)["body"]
    end
  end

  def test_connection_close_from_the_client_is_honoured
    connection = connect
    connection.write(request("GET", "/close-me", [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status
    assert response.close?, "the response to a Connection: close request should say connection: close:\n#{response}"
    assert_equal "", assert_closed_by_server(connection)
  end

  def test_http_1_0_closes_by_default
    connection = connect
    connection.write(request("GET", "/one-zero", version: "1.0"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "HTTP/1.0", JSON.parse(response.body)["protocol"]
    assert_equal "", assert_closed_by_server(connection, "an HTTP/1.0 request without keep-alive ends the connection")
  end

  def test_http_1_0_keep_alive_on_request
    connection = connect
    2.times do |i|
      connection.write(request("GET", "/one-zero-ka/#{i}", [["Connection", "keep-alive"]], version: "1.0"))
      response = connection.read_response
      assert_equal 200, response.status
      assert_equal "keep-alive", response["connection"]&.downcase,
                   "an HTTP/1.0 keep-alive response must say so, or the client will wait for the close:\n#{response}"
    end
  end

  def test_responses_carry_date_and_lower_case_header_names
    response = roundtrip(request("GET", "/headers"))
    assert_equal 200, response.status
    refute_nil response["date"], "the server adds a date field:\n#{response}"
    assert_match(/\A\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\z/, response["date"])
    response.header_names.each { |name| assert_equal name.downcase, name, "header names are written lower-case" }
    assert_equal response.body.bytesize.to_s, response["content-length"]
  end
end
