# frozen_string_literal: true

require_relative "../support/spindle_process"

# How the server turns an app's status and headers into bytes: Rack 3 array
# values, framing it has to choose, and app output it must never write as is
# (shared/BAD_INPUTS.md, "App output": header dropped or 500, never response
# splitting).
class ResponseHeadersTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_array_header_value_is_written_as_repeated_field_lines
    response = roundtrip(request("GET", "/headers/multi"))
    assert_equal %w[a=1 b=2], response.values("set-cookie"), response.to_s
  end

  def test_array_body_without_length_gets_a_content_length
    response = roundtrip(request("GET", "/headers/array"))
    assert_equal "abcdefghi", response.body
    assert_equal "9", response["content-length"], "the size of an Array body is known:\n#{response}"
    assert_nil response["transfer-encoding"]
  end

  def test_empty_body_without_length
    connection = connect
    connection.write(request("GET", "/headers/empty"))
    response = connection.read_response
    assert_equal "", response.body
    assert(response["content-length"] == "0" || response.framing == :chunked, "an empty body must be framed:\n#{response}")
    connection.write(request("GET", "/after-empty"))
    assert_equal 200, connection.read_response.status
  end

  %w[crlf lf nul].each do |kind|
    define_method("test_header_value_with_#{kind}_is_never_written") do
      connection = connect
      connection.write(request("GET", "/unsafe_headers/#{kind}"))
      response = connection.read_response
      assert_includes [200, 500], response.status, response.to_s
      assert_nil response["x-injected"], "response splitting: the app injected a header line:\n#{response}"
      response.headers.each do |(name, value)|
        refute_match(/[\r\n\0]/, value, "field #{name} carries a control character")
      end
      assert_equal "fine", response["x-good"] if response.status == 200
    end
  end

  def test_invalid_header_names_are_never_written
    response = roundtrip(request("GET", "/unsafe_headers/bad_name"))
    assert_includes [200, 500], response.status, response.to_s
    names = response.header_names
    refute_includes names, "bad name"
    refute names.any? { |name| name.start_with?("x") && name.include?("colon") }, "a name with a colon was written:\n#{response}"
  end

  %w[42 1000].each do |status|
    define_method("test_status_#{status}_from_the_app_becomes_a_500") do
      response = roundtrip(request("GET", "/unsafe_headers/status_#{status}"))
      assert_equal 500, response.status, response.to_s
      assert_still_serving
    end
  end

  def test_rack_2_app_with_mixed_case_names
    response = roundtrip(request("GET", "/unsafe_headers/rack2"))
    assert_equal 200, response.status
    assert_equal "hello", response.body
    assert_equal ["5"], response.values("content-length"),
                 "the app's Content-Length must not be doubled by the server's own:\n#{response}"
    assert_nil response["transfer-encoding"]
  end

  def test_body_that_raises_before_its_first_chunk_becomes_a_500
    connection = connect
    connection.write(request("GET", "/unsafe_headers/raise_in_each"))
    head = connection.read_head
    if head.status == 200
      refute_includes connection.read_until_eof, "0\r\n\r\n", "a failed body must not look complete"
    end
    assert_equal 500, head.status,
                 "the body raised before producing a byte, so the head need not have been sent and a 500 was possible:\n#{head}"
  ensure
    assert_still_serving
  end
end
