# frozen_string_literal: true

require_relative "../support/spindle_process"

# rack.early_hints: a 103 (RFC 8297) with the hinted fields before the final
# response, on the same connection, in the right order, with --early-hints.
# Without it (the default, as in Puma) the env has no rack.early_hints, so no
# 103 goes out: HTTP/1.1 clients that mishandle 1xx (wrk) took it for the
# response.
class EarlyHintsTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, "--early-hints", app_path("all")

  LINK = "</style.css>; rel=preload; as=style"

  def test_103_arrives_before_the_200
    connection = connect
    connection.write(request("GET", "/early_hints"))
    first = connection.read_response(interim: false)
    assert_equal 103, first.status, "expected 103 Early Hints first, got:\n#{first}"
    assert_equal LINK, first["link"]
    assert_nil first["content-length"], "a 1xx has no content:\n#{first}"

    final = connection.read_response
    assert_equal 200, final.status
    assert_equal "hinted\n", final.body
    assert_equal LINK, final["link"]
  end

  def test_connection_is_reusable_after_early_hints
    connection = connect
    connection.write(request("GET", "/early_hints"))
    final = connection.read_response
    assert_equal [103], final.interim.map(&:status)
    connection.write(request("GET", "/early_hints"))
    assert_equal [103], connection.read_response.interim.map(&:status)
  end

  def test_no_103_to_an_http_1_0_client
    # RFC 9110 §15.2: a server MUST NOT send a 1xx response to an HTTP/1.0 client.
    connection = connect
    connection.write(request("GET", "/early_hints", version: "1.0"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_empty response.interim, "1xx sent to an HTTP/1.0 client"
  end

  def test_off_by_default_no_103_and_no_rack_early_hints
    process = spawn_server("-b", LOOPBACK, app_path("all"))
    connection = connect(process)
    connection.write(request("GET", "/early_hints"))
    response = connection.read_response
    assert_equal 200, response.status
    assert_empty response.interim, "a 103 without --early-hints"
    assert_equal "rack.early_hints missing\n", response.body
  end
end
