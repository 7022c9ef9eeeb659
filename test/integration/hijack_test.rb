# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# Rack hijacking: full (the app takes the socket from env["rack.hijack"] and
# writes everything itself) and partial (the server writes the head, then
# hands the socket to the "rack.hijack" response header's callable). Both
# apps read 5 bytes the client sends afterwards and echo them, which shows
# they hold the live connection and not a copy of the request.
class HijackTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_env_advertises_full_and_partial_hijack
    echoed = JSON.parse(roundtrip(request("GET", "/env")).body)
    assert_equal true, echoed["full_hijack"], "env[\"rack.hijack\"] should be a callable (full hijack)"
    assert_equal true, echoed["hijack"], "env[\"rack.hijack?\"] should be true (partial hijack)"
  end

  def test_full_hijack
    connection = connect
    connection.write(request("GET", "/hijack"))
    head = connection.read_head
    assert_equal 200, head.status, "the app's own response, not the server's:\n#{head}"
    assert_equal [%w[content-type text/plain], %w[connection close]], head.headers,
                 "after a full hijack the server must write nothing of its own"
    assert_equal "hijacked\n", connection.read_exactly(9)
    connection.write("ping\n")
    assert_equal "echo: ping\n", connection.read_until_eof, "the app reads and writes the raw socket; nothing else follows"
    assert_still_serving
  end

  def test_partial_hijack
    connection = connect
    connection.write(request("GET", "/partial_hijack"))
    head = connection.read_head
    assert_equal 200, head.status
    assert_equal "text/plain", head["content-type"]
    assert_nil head["rack.hijack"], "the rack.hijack header is for the server, not the client:\n#{head}"
    assert_nil head["transfer-encoding"], "the callable writes raw bytes; chunked framing would be a lie:\n#{head}"
    assert_nil head["content-length"]
    assert_equal "partial\n", connection.read_exactly(8)
    connection.write("pong\n")
    assert_equal "echo: pong\n", connection.read_until_eof
    assert_still_serving
  end

  def test_connection_is_not_reused_after_hijack
    connection = connect
    connection.write(request("GET", "/partial_hijack"))
    connection.read_head
    connection.read_exactly(8)
    connection.write("pong\n")
    connection.read_until_eof
    assert connection.eof?, "a hijacked connection belongs to the app, which closed it"
  end
end
