# frozen_string_literal: true

require_relative "../support/spindle_process"

# rack.early_hints: a 103 (RFC 8297) with the hinted fields before the final
# response, on the same connection, in the right order.
class EarlyHintsTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

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
end
