# frozen_string_literal: true

require "json"
require "digest"
require_relative "../support/spindle_process"

# Request bodies: chunked and Content-Length framed, small and large, whole
# and trickled across writes. The app sees the decoded bytes.
class ChunkedUploadTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_chunked_body_is_decoded_for_the_app
    response = roundtrip(request("POST", "/chunked", [["Transfer-Encoding", "chunked"]],
                                 body: HttpClient.chunked("Hello, ", "chunked ", "world")))
    assert_equal 200, response.status
    echoed = JSON.parse(response.body)
    assert_equal "Hello, chunked world", echoed["body"]
    refute echoed["headers"].key?("HTTP_TRANSFER_ENCODING") && echoed["headers"].key?("CONTENT_LENGTH"),
           "the app must not be told both framings"
  end

  # RFC 9110 §5.6.1.2: empty list elements are ignored; this is chunked.
  def test_empty_elements_in_the_coding_list_are_ignored
    [", chunked", "chunked ,"].each do |codings|
      response = roundtrip(request("POST", "/chunked", [["Transfer-Encoding", codings]],
                                   body: HttpClient.chunked("Hello")))
      assert_equal 200, response.status, codings
      assert_equal "Hello", JSON.parse(response.body)["body"], codings
    end
  end

  def test_chunked_body_with_extensions_and_trailers
    body = "5;name=value\r\nHello\r\n6;quoted=\"a b\"\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n"
    response = roundtrip(request("POST", "/trailers", [["Transfer-Encoding", "chunked"]], body: body))
    assert_equal 200, response.status
    assert_equal "Hello world", JSON.parse(response.body)["body"]
  end

  def test_chunked_body_trickled_in_small_writes
    connection = connect
    connection.write(request("POST", "/trickle", [["Transfer-Encoding", "chunked"]]))
    HttpClient.chunked("abc", "defgh", "i").each_char { |char| connection.write(char) }
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "abcdefghi", JSON.parse(response.body)["body"]
  end

  def test_empty_chunked_body
    response = roundtrip(request("POST", "/empty", [["Transfer-Encoding", "chunked"]], body: "0\r\n\r\n"))
    assert_equal 200, response.status
    assert_equal "", JSON.parse(response.body)["body"]
  end

  def test_large_chunked_upload_is_complete_and_spooled_to_a_file
    payload = Random.new(42).bytes(4 * 1024 * 1024)
    connection = connect
    connection.write(request("POST", "/upload", [["Transfer-Encoding", "chunked"]]))
    piece = 256 * 1024
    (0...payload.bytesize).step(piece) do |offset|
      slice = payload.byteslice(offset, piece)
      connection.write("#{slice.bytesize.to_s(16)}\r\n#{slice}\r\n")
    end
    connection.write("0\r\n\r\n")
    report = JSON.parse(connection.read_response.body)
    assert_equal payload.bytesize, report["body_size"]
    assert_equal Digest::SHA256.hexdigest(payload), report["body_sha256"]
    assert report["file_backed"], "a 4 MiB body should be spooled to a tempfile, rack.input was #{report['input_class']}"
  end

  def test_large_content_length_upload_is_complete_and_spooled_to_a_file
    payload = Random.new(7).bytes(4 * 1024 * 1024)
    response = roundtrip(request("POST", "/upload", body: payload))
    report = JSON.parse(response.body)
    assert_equal payload.bytesize, report["body_size"]
    assert_equal Digest::SHA256.hexdigest(payload), report["body_sha256"]
    assert report["file_backed"], "a 4 MiB body should be spooled to a tempfile, rack.input was #{report['input_class']}"
  end

  def test_small_body_stays_in_memory
    response = roundtrip(request("POST", "/upload", body: "small"))
    report = JSON.parse(response.body)
    assert_equal 5, report["body_size"]
    refute report["file_backed"], "a 5-byte body should not need a tempfile (rack.input was #{report['input_class']})"
  end

  def test_get_without_body_gives_an_empty_rack_input
    response = roundtrip(request("GET", "/upload"))
    report = JSON.parse(response.body)
    assert_equal 0, report["body_size"]
  end
end
