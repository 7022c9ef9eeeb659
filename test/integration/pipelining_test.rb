# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Pipelining (RFC 9112 §9.3.2): requests sent back to back without waiting
# are answered in the order they were sent.
class PipeliningTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_three_requests_in_one_write_are_answered_in_order
    connection = connect
    connection.write(%w[/a /b /c].map { |path| request("GET", path) }.join)
    paths = 3.times.map do
      response = connection.read_response
      assert_equal 200, response.status
      JSON.parse(response.body)["path"]
    end
    assert_equal %w[/a /b /c], paths
  end

  def test_pipelined_requests_with_bodies_do_not_bleed_into_each_other
    connection = connect
    bytes = request("POST", "/p1", body: "one") +
            request("POST", "/p2", [["Transfer-Encoding", "chunked"]], body: HttpClient.chunked("tw", "o")) +
            request("GET", "/p3")
    connection.write(bytes)
    echoed = 3.times.map { JSON.parse(connection.read_response.body).values_at("path", "body") }
    assert_equal [["/p1", "one"], ["/p2", "two"], ["/p3", ""]], echoed
  end

  def test_pipelined_head_request_does_not_swallow_the_next_response
    connection = connect
    connection.write(request("HEAD", "/status/") + request("GET", "/after-head"))
    head = connection.read_response(head: true)
    assert_equal 200, head.status
    assert_equal "", head.body
    following = connection.read_response
    assert_equal "/after-head", JSON.parse(following.body)["path"]
  end

  def test_many_pipelined_requests_in_one_write
    connection = connect
    connection.write(50.times.map { |i| request("GET", "/many/#{i}") }.join)
    paths = 50.times.map { JSON.parse(connection.read_response.body)["path"] }
    assert_equal 50.times.map { |i| "/many/#{i}" }, paths
  end

  def test_pipelined_request_after_connection_close_is_not_served
    connection = connect
    connection.write(request("GET", "/last", [["Connection", "close"]]) + request("GET", "/after-close-marker-7f3a"))
    response = connection.read_response
    assert_equal "/last", JSON.parse(response.body)["path"]
    assert_equal "", assert_closed_by_server(connection)
    refute app_saw?("after-close-marker-7f3a"), "a request after Connection: close must not reach the app"
  end
end
