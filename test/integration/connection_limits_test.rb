# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# The per-connection request cap and the timeouts that free a connection a
# client is not using (options documented in docs/CONFIG.md). The timeouts
# are set short so the server acts well inside the client's read deadline;
# the tests wait for the server's action, they do not measure it.
class ConnectionLimitsTest < SpindleIntegrationTest
  LIMITS = ["-b", LOOPBACK, "--max-keepalive-requests", "3", "--keepalive-timeout", "0.5",
            "--header-timeout", "0.5", "--read-timeout", "0.5", app_path("all")].freeze
  serve_with(*LIMITS)

  def test_request_cap_closes_the_connection_after_the_last_allowed_request
    connection = connect
    responses = 3.times.map do |i|
      connection.write(request("GET", "/cap/#{i}"))
      connection.read_response
    end
    refute responses[0].close?
    refute responses[1].close?
    assert responses[2].close?, "the last request the cap allows should say connection: close:\n#{responses[2]}"
    assert_equal "", assert_closed_by_server(connection)
  end

  def test_idle_keep_alive_connection_is_closed
    connection = connect
    connection.write(request("GET", "/idle"))
    assert_equal 200, connection.read_response.status
    assert_equal "", assert_closed_by_server(connection, "an idle keep-alive connection should be closed after its timeout")
  end

  def test_head_that_never_completes_gets_408
    connection = connect
    connection.write("GET /slow-head HTTP/1.1\r\nHost: a\r\n")
    response = connection.read_response
    assert_equal 408, response.status
    assert response.close?, response.to_s
    assert_closed_by_server(connection)
    assert_still_serving
  end

  def test_body_that_never_completes_gets_408
    connection = connect
    connection.write(request("POST", "/slow-body-2e8f", [["Content-Length", "100"]]) + "part")
    response = connection.read_response
    assert_equal 408, response.status
    assert response.close?, response.to_s
    assert_closed_by_server(connection)
    refute app_saw?("slow-body-2e8f")
  end
end

# The same limits on the other engines: each enforces deadlines its own way
# (a selector's expiry scan, the fiber engines' DeadlineSweeper).
%w[blocking fibers hybrid].each do |engine|
  Class.new(ConnectionLimitsTest) do
    serve_with("--engine", engine, *ConnectionLimitsTest::LIMITS)
  end.then { |klass| Object.const_set("ConnectionLimits#{engine.capitalize}Test", klass) }
end
