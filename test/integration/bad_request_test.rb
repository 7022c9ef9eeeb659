# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "../support/spindle_process"

# Bad request bytes (shared/BAD_INPUTS.md): the server answers with the status
# the table gives, says connection: close, closes the connection, never calls
# the app, and keeps serving. Each vector's target carries a fresh marker so
# the test can ask the app whether it ever saw the request. (The parser's unit
# tests cover every class split at every byte; these check the wiring.)
class BadRequestTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  VECTORS = {
    "Content-Length with Transfer-Encoding" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    "two Content-Length fields" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 0\r\n\r\nA"],
    "signed Content-Length" => [400, "POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello"],
    "hex Content-Length" => [400, "POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\nhello"],
    "Content-Length of 30 digits" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nContent-Length: #{'9' * 30}\r\n\r\nhello"],
    "bare LF in the head" => [400, "GET /%s HTTP/1.1\r\nHost: a\nX: b\r\n\r\n"],
    "NUL in a field value" => [400, "GET /%s HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n"],
    "obs-fold" => [400, "GET /%s HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"],
    "space before the colon" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"],
    "separator in the method" => [400, "G(T /%s HTTP/1.1\r\nHost: a\r\n\r\n"],
    "method over 32 bytes" => [400, "#{'M' * 33} /%s HTTP/1.1\r\nHost: a\r\n\r\n"],
    "bad version" => [400, "GET /%s HTTP/1.a\r\nHost: a\r\n\r\n"],
    "control character in the target" => [400, "GET /%s\x01 HTTP/1.1\r\nHost: a\r\n\r\n"],
    "HTTP/1.1 without Host" => [400, "GET /%s HTTP/1.1\r\nX: y\r\n\r\n"],
    "two Host fields" => [400, "GET /%s HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    "Transfer-Encoding in HTTP/1.0" =>
      [400, "POST /%s HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    "chunked not last" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"],
    "unknown transfer coding" => [501, "POST /%s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"],
    "bad chunk size" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"],
    "chunk data longer than its size" =>
      [400, "POST /%s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWorld\r\n0\r\n\r\n"],
    "unsupported HTTP version" => [505, "GET /%s HTTP/3.0\r\nHost: a\r\n\r\n"],
    "request line too long" => [414, "GET /%s/#{'a' * 20_000} HTTP/1.1\r\nHost: a\r\n\r\n"],
    "field value too long" => [431, "GET /%s HTTP/1.1\r\nHost: a\r\nX-Big: #{'b' * 20_000}\r\n\r\n"],
    "head too large" => [431, "GET /%s HTTP/1.1\r\nHost: a\r\n#{(1..1000).map { |i| "X-#{i}: #{'c' * 90}\r\n" }.join}\r\n"]
  }.freeze

  VECTORS.each do |name, (status, template)|
    define_method("test_#{name.downcase.gsub(/[^a-z0-9]+/, '_')}") do
      assert_refused(status, template)
    end
  end

  def test_vector_split_across_writes_is_refused_the_same
    marker = fresh_marker
    bytes = "POST /#{marker} HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 0\r\n\r\nA"
    connection = connect
    bytes.each_char { |char| connection.write(char) }
    assert_refusal(connection, 400, marker)
  end

  def test_smuggled_request_behind_an_ambiguous_one_never_reaches_the_app
    marker = fresh_marker
    smuggled = "GET /smuggled-#{marker} HTTP/1.1\r\nHost: a\r\n\r\n"
    connection = connect
    connection.write("POST /#{marker} HTTP/1.1\r\nHost: a\r\nContent-Length: #{smuggled.bytesize + 5}\r\n" \
                     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n#{smuggled}")
    assert_refusal(connection, 400, marker)
    refute app_saw?("smuggled-#{marker}"), "the smuggled request reached the app"
  end

  def test_bad_request_after_a_good_one_on_a_keep_alive_connection
    marker = fresh_marker
    connection = connect
    connection.write(request("GET", "/good-first"))
    assert_equal 200, connection.read_response.status
    connection.write("GET /#{marker} HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n")
    assert_refusal(connection, 400, marker)
  end

  def test_tls_client_hello_on_the_plain_port
    # The first bytes of a TLS 1.2 ClientHello record.
    hello = [0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03].pack("C*") + Random.new(1).bytes(64)
    connection = connect
    connection.write(hello)
    response = connection.read_response
    assert_equal 400, response.status
    assert_closed_by_server(connection)
    assert_still_serving
  end

  # Issue 11, item 17: a method is any token (RFC 9110 §9.1); the app, not the
  # parser, says which it serves.
  def test_any_token_method_reaches_the_app
    connection = connect
    %w[get X_CUSTOM PURGE1].each do |method|
      connection.write(request(method, "/method-#{method}"))
      response = connection.read_response
      assert_equal 200, response.status, "#{method}:\n#{response}"
      assert_equal method, JSON.parse(response.body)["method"]
    end
  end

  private

  def fresh_marker
    "bad-#{SecureRandom.hex(6)}"
  end

  def assert_refused(status, template)
    marker = fresh_marker
    connection = connect
    connection.write(format(template, marker))
    assert_refusal(connection, status, marker)
  end

  def assert_refusal(connection, status, marker)
    response = connection.read_response
    assert_equal status, response.status, "wrong status:\n#{response}"
    assert response.close?, "a refusal must say connection: close:\n#{response}"
    assert_closed_by_server(connection, "the server must close the connection after refusing a request")
    refute app_saw?(marker), "the app must not be called for a refused request"
    assert_still_serving
  end
end
