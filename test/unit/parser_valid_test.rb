# frozen_string_literal: true

require_relative "../test_helper"

# Requests the parser must accept, and the env, body and flags it must produce
# for them (docs/PARSER.md). Every request is also checked split at every byte
# offset and fed one byte at a time.
class ParserValidTest < Minitest::Test
  include ParserHelpers
  Wire = ParserHelpers::Wire

  def test_get_origin_form_with_query
    env = assert_accepted(Wire.request("GET /a/b%20c?x=1&y=%2F HTTP/1.1", "Host: example.com")).env

    assert_equal "GET", env["REQUEST_METHOD"]
    assert_equal "/a/b%20c?x=1&y=%2F", env["REQUEST_URI"]
    assert_equal "/a/b%20c", env["PATH_INFO"], "PATH_INFO stays percent-encoded"
    assert_equal "x=1&y=%2F", env["QUERY_STRING"]
    assert_equal "HTTP/1.1", env["SERVER_PROTOCOL"]
    assert_equal "example.com", env["HTTP_HOST"]
    assert_equal "example.com", env["SERVER_NAME"]
    assert_equal "80", env["SERVER_PORT"], "no port in the authority: the scheme's default"
  end

  def test_query_string_is_empty_when_absent
    assert_equal "", assert_accepted(Wire.get).env["QUERY_STRING"]
    env = assert_accepted(Wire.request("GET /p? HTTP/1.1", "Host: a")).env
    assert_equal ["/p", ""], env.values_at("PATH_INFO", "QUERY_STRING")
  end

  def test_host_port_becomes_server_port
    env = assert_accepted(Wire.request("GET / HTTP/1.1", "Host: example.com:8080")).env
    assert_equal ["example.com:8080", "example.com", "8080"],
                 env.values_at("HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
  end

  def test_request_without_body_is_done_at_end_of_head
    bytes = Wire.get
    result = assert_accepted(bytes + "GET /next".b)

    assert_equal bytes.bytesize, result.consumed, "stops at the end of the message"
    assert_equal "", result.body
    assert_equal false, result.chunked
    refute result.env.key?("CONTENT_LENGTH")
  end

  # "content_length => Integer, or nil when the body is chunked".
  def test_request_without_body_has_content_length_zero
    assert_equal 0, assert_accepted(Wire.get).content_length
  end

  def test_post_with_content_length_body
    result = assert_accepted(Wire.post("Content-Type: text/plain", "Content-Length: 11", body: "hello world"))

    assert_equal "hello world", result.body
    assert_equal 11, result.content_length
    assert_equal false, result.chunked
    assert_equal ["POST", "text/plain", "11"], result.env.values_at("REQUEST_METHOD", "CONTENT_TYPE", "CONTENT_LENGTH")
    refute result.env.key?("HTTP_CONTENT_TYPE")
    refute result.env.key?("HTTP_CONTENT_LENGTH")
  end

  def test_body_stops_at_content_length
    result = assert_accepted(Wire.post("Content-Length: 5", body: "helloGET / HTTP/1.1\r\n"))
    assert_equal "hello", result.body
    assert_equal Wire.post("Content-Length: 5", body: "hello").bytesize, result.consumed
  end

  def test_partial_body_is_incomplete_and_delivered_so_far
    result = assert_same_everywhere(Wire.post("Content-Length: 5", body: "hel"))
    assert_equal [:incomplete, "hel", 5], [result.verdict, result.body, result.content_length]
  end

  def test_content_length_zero_and_leading_zeros
    assert_equal ["", 0], assert_accepted(Wire.post("Content-Length: 0")).to_h.values_at(:body, :content_length)
    result = assert_accepted(Wire.post("Content-Length: 007", body: "1234567"))
    assert_equal ["1234567", 7], [result.body, result.content_length]
  end

  def test_eighteen_digit_content_length_without_body_limit
    bytes = Wire.post("Content-Length: 999999999999999999", body: "abc")
    result = assert_same_everywhere(bytes, max_body: nil)
    assert_equal [:incomplete, 999_999_999_999_999_999, "abc"],
                 [result.verdict, result.content_length, result.body]
  end

  def test_chunked_body_with_extensions_and_trailers
    wire = "5;name=val\r\nhello\r\n6;a;b=\"q x\"\r\n world\r\n0;last\r\n" \
           "X-Trailer: t\r\nContent-Length: 99\r\nHost: evil.test\r\n\r\n"
    result = assert_accepted(Wire.chunked(wire))

    assert_equal "hello world", result.body
    assert_equal [true, nil], [result.chunked, result.content_length]
    assert_equal "chunked", result.env["HTTP_TRANSFER_ENCODING"]
    refute result.env.key?("HTTP_X_TRAILER"), "trailers are discarded"
    refute result.env.key?("CONTENT_LENGTH"), "a trailer never reaches the framing"
    assert_equal "example.com", result.env["HTTP_HOST"]
  end

  def test_chunk_sizes_are_hex_in_either_case_with_leading_zeros
    wire = "a\r\n0123456789\r\nA\r\nabcdefghij\r\n0001\r\n!\r\n0\r\n\r\n"
    assert_equal "0123456789abcdefghij!", assert_accepted(Wire.chunked(wire)).body
  end

  def test_chunked_stops_at_end_of_message
    message = Wire.chunked("3\r\nabc\r\n0\r\n\r\n")
    result = assert_accepted(message + "GET / HTTP/1.1\r\n".b)
    assert_equal [message.bytesize, "abc"], [result.consumed, result.body]
  end

  # RFC 9112 §7: "All transfer-coding names are case-insensitive".
  def test_transfer_coding_name_is_case_insensitive
    result = assert_accepted(Wire.post("Transfer-Encoding: Chunked", body: "1\r\nx\r\n0\r\n\r\n"))
    assert_equal [true, "x"], [result.chunked, result.body]
  end

  # RFC 9110 §5.6.1.2: "a recipient MUST parse and ignore a reasonable number
  # of empty list elements". Transfer-Encoding is a list: these are chunked.
  def test_empty_elements_around_chunked_are_ignored
    ["Transfer-Encoding: , chunked", "Transfer-Encoding: chunked ,", "Transfer-Encoding: ,,chunked,,",
     "Transfer-Encoding: \t,  chunked", "Transfer-Encoding: , chunked , "].each do |field|
      result = assert_accepted(Wire.post(field, body: "1\r\nx\r\n0\r\n\r\n"))
      assert_equal [true, nil, "x"], [result.chunked, result.content_length, result.body], field
    end
  end

  def test_absolute_form_target_supplies_host
    bytes = Wire.request("GET http://example.org:8080/p/q?x=1 HTTP/1.1", "Host: other.test")
    env = assert_accepted(bytes).env

    assert_equal "http://example.org:8080/p/q?x=1", env["REQUEST_URI"]
    assert_equal ["/p/q", "x=1"], env.values_at("PATH_INFO", "QUERY_STRING")
    assert_equal ["example.org", "8080"], env.values_at("SERVER_NAME", "SERVER_PORT")
    assert_equal "example.org:8080", env["HTTP_HOST"], "RFC 9112 §3.2.2: the target's authority wins"
  end

  def test_absolute_form_https_without_port
    env = assert_accepted(Wire.request("GET https://secure.test/ HTTP/1.1", "Host: secure.test")).env
    assert_equal ["secure.test", "secure.test", "/"], env.values_at("SERVER_NAME", "HTTP_HOST", "PATH_INFO")
    assert_equal "443", env["SERVER_PORT"], "https's default port"
  end

  # Issue 11, item 17: RFC 9110 §9.1, a method is any token and case-sensitive;
  # the app answers 405 or 501 for one it does not serve.
  def test_any_token_is_a_method
    ["get", "Get", "X_CUSTOM", "PURGE1", "M-SEARCH", %q(!#$%&'*+-.^_`|~), "connect", "M" * 32].each do |method|
      env = assert_accepted(Wire.request("#{method} /x HTTP/1.1", "Host: a")).env
      assert_equal [method, "/x"], env.values_at("REQUEST_METHOD", "PATH_INFO"), method
    end
  end

  # GET, HEAD and POST come from constants made at load; any other method
  # from Ruby's table of interned strings. Both give the same frozen, binary
  # value, and a near miss (case, length) is not taken for a constant.
  def test_common_methods_are_the_interned_values
    %w[GET HEAD POST PUT GETX POS Get head].each do |method|
      parser = Spindle::HTTP::Parser.new
      parser.execute("#{method} /x HTTP/1.1\r\nHost: a\r\n\r\n".b, 0, String.new)
      value = parser.env["REQUEST_METHOD"]
      assert_equal method, value
      assert_predicate value, :frozen?, method
      assert_equal Encoding::BINARY, value.encoding, method
      assert_same(-method.b, value, method)
    end
  end

  def test_options_asterisk
    env = assert_accepted(Wire.request("OPTIONS * HTTP/1.1", "Host: example.com")).env
    assert_equal ["OPTIONS", "*", ""], env.values_at("REQUEST_METHOD", "REQUEST_URI", "QUERY_STRING")
  end

  # Rack SPEC: SERVER_NAME and SERVER_PORT "can be used to complete the URL",
  # so an IPv6 literal keeps its brackets.
  def test_ipv6_host_literal_with_port
    env = assert_accepted(Wire.request("GET / HTTP/1.1", "Host: [2001:db8::1]:8443")).env
    assert_equal ["[2001:db8::1]:8443", "[2001:db8::1]", "8443"],
                 env.values_at("HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
  end

  def test_ipv6_host_literal_without_port
    env = assert_accepted(Wire.request("GET / HTTP/1.1", "Host: [::1]")).env
    assert_equal "[::1]", env["SERVER_NAME"]
    assert_equal "80", env["SERVER_PORT"]
  end

  def test_duplicate_fields_are_combined_with_comma
    env = assert_accepted(Wire.get("X-A: 1", "Accept: text/html", "x-a: 2", "X-A: 3")).env
    assert_equal "1, 2, 3", env["HTTP_X_A"]
    assert_equal "text/html", env["HTTP_ACCEPT"]
  end

  # A known name (Accept) is added without a lookup the first time; the
  # second time must still find the first, in every request on a parser.
  def test_duplicate_known_fields_are_combined_in_each_request
    parser = Spindle::HTTP::Parser.new
    2.times do |i|
      parser.reset
      run_to_done(parser, Wire.get("Accept: text/html", "User-Agent: u#{i}", "accept: */*").dup, 0, String.new)
      assert_equal ["text/html, */*", "u#{i}"], parser.env.values_at("HTTP_ACCEPT", "HTTP_USER_AGENT"), "request #{i + 1}"
    end
  end

  def test_duplicate_cookies_are_combined_with_semicolon
    assert_equal "a=1; b=2", assert_accepted(Wire.get("Cookie: a=1", "cookie: b=2")).env["HTTP_COOKIE"]
  end

  def test_field_name_becomes_cgi_key
    env = assert_accepted(Wire.get("x-Forwarded-PROTO: https", "Accept-Encoding: br")).env
    assert_equal ["https", "br"], env.values_at("HTTP_X_FORWARDED_PROTO", "HTTP_ACCEPT_ENCODING")
  end

  def test_underscore_field_names_are_dropped
    env = assert_accepted(Wire.get("X_Custom: 1", "X-Real-IP: 10.0.0.1", "X_Real_IP: 6.6.6.6")).env
    refute env.key?("HTTP_X_CUSTOM")
    assert_equal "10.0.0.1", env["HTTP_X_REAL_IP"]
  end

  def test_field_value_whitespace_is_stripped_inner_kept
    env = assert_accepted(Wire.get("X-A: \t a \t b \t", "X-Empty:", "X-Blank: \t ")).env
    assert_equal ["a \t b", "", ""], env.values_at("HTTP_X_A", "HTTP_X_EMPTY", "HTTP_X_BLANK")
  end

  def test_obs_text_in_field_value_is_kept_as_bytes
    env = assert_accepted(Wire.get("X-Name: caf\xC3\xA9 \xA0\xFF".b)).env
    assert_equal "caf\xC3\xA9 \xA0\xFF".b, env["HTTP_X_NAME"]
  end

  def test_env_values_are_binary
    env = assert_accepted(Wire.post("Content-Type: text/plain", "Content-Length: 0", "X-A: \xE2\x9C\x93".b)).env
    not_binary = env.reject { |_, value| value.encoding == Encoding::BINARY }
    assert_empty not_binary.transform_values(&:encoding), "every env value is ASCII-8BIT"
  end

  def test_env_keys_are_frozen_and_shared_between_parsers
    bytes = Wire.post("User-Agent: t", "Content-Type: text/plain", "Content-Length: 0", "X-Custom-Thing: 1")
    first = parser_env(bytes)
    second = parser_env(bytes)

    first.each_key do |key|
      assert key.frozen?, "#{key} is frozen"
      assert_same key, second.keys.find { |k| k == key }, "#{key} is the same object in both envs"
    end
  end

  def test_method_may_hold_dashes_and_any_uppercase_name
    assert_equal "M-SEARCH", assert_accepted(Wire.request("M-SEARCH / HTTP/1.1", "Host: a")).env["REQUEST_METHOD"]
    assert_equal "PROPFIND", assert_accepted(Wire.request("PROPFIND /d HTTP/1.1", "Host: a")).env["REQUEST_METHOD"]
  end

  # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request-line.
  def test_leading_empty_lines_are_skipped
    bytes = "\r\n\r\n".b + Wire.get
    result = assert_accepted(bytes)
    assert_equal ["GET", bytes.bytesize], [result.env["REQUEST_METHOD"], result.consumed]
  end

  def test_http10_closes_unless_asked_to_keep_alive
    assert_equal false, assert_accepted(Wire.request("GET / HTTP/1.0")).keep_alive
    assert_equal true, assert_accepted(Wire.request("GET / HTTP/1.0", "Connection: keep-alive")).keep_alive
    assert_equal true, assert_accepted(Wire.request("GET / HTTP/1.0", "Connection: Keep-Alive")).keep_alive
  end

  def test_http10_needs_no_host
    env = assert_accepted(Wire.request("GET /x HTTP/1.0")).env
    assert_equal ["HTTP/1.0", "/x"], env.values_at("SERVER_PROTOCOL", "PATH_INFO")
  end

  def test_http11_keeps_alive_unless_asked_to_close
    assert_equal true, assert_accepted(Wire.get).keep_alive
    assert_equal false, assert_accepted(Wire.get("Connection: close")).keep_alive
  end

  # RFC 9110 §7.6.1: connection options are case-insensitive and form a list;
  # RFC 9112 §9.3: with the "close" option the connection does not persist.
  def test_close_option_anywhere_in_connection_list
    assert_equal false, assert_accepted(Wire.get("Connection: Close")).keep_alive
    assert_equal false, assert_accepted(Wire.get("Connection: upgrade, close")).keep_alive
    assert_equal false, assert_accepted(Wire.get("Connection: te", "Connection: close")).keep_alive
  end

  # RFC 9110 §5.6.1.2: empty list elements are ignored, in Connection too.
  def test_empty_elements_in_the_connection_list_are_ignored
    assert_equal false, assert_accepted(Wire.get("Connection: , close")).keep_alive
    assert_equal false, assert_accepted(Wire.get("Connection: close,")).keep_alive
    assert_equal true, assert_accepted(Wire.get("Connection: ,")).keep_alive
    assert_equal true, assert_accepted(Wire.request("GET / HTTP/1.0", "Connection: ,keep-alive,")).keep_alive
  end

  def test_expect_100_continue
    result = assert_same_everywhere(Wire.post("Content-Length: 5", "Expect: 100-continue"))
    assert_equal [:incomplete, true], [result.verdict, result.expect_continue]
    assert_equal false, assert_accepted(Wire.post("Content-Length: 0")).expect_continue
  end

  # Expect is a list (RFC 9110 §10.1.1: Expect = #expectation), whose empty
  # elements are ignored (§5.6.1.2); an empty list expects nothing.
  def test_empty_elements_in_the_expect_list_are_ignored
    ["Expect: , 100-continue", "Expect: 100-continue,", "Expect: 100-continue, ,100-continue"].each do |field|
      assert_equal [:incomplete, true], assert_same_everywhere(Wire.post("Content-Length: 5", field))
        .then { |r| [r.verdict, r.expect_continue] }, field
    end
    assert_equal false, assert_accepted(Wire.post("Content-Length: 0", "Expect: ,")).expect_continue
  end

  # RFC 9110 §10.1.1: "The Expect field value is case-insensitive."
  def test_expect_100_continue_is_case_insensitive
    assert_equal true, assert_same_everywhere(Wire.post("Content-Length: 1", "Expect: 100-Continue")).expect_continue
  end

  def test_execute_pauses_after_head_and_after_message
    head = Wire.post("Content-Length: 3")
    data = head + "abcGET".b
    parser = Spindle::HTTP::Parser.new
    sink = String.new

    assert_equal [head.bytesize, :body], [parser.execute(data, 0, sink), parser.state]
    assert_equal "", sink
    assert_equal [head.bytesize + 3, :done], [parser.execute(data, head.bytesize, sink), parser.state]
    assert_equal "abc", sink
  end

  def test_execute_with_nothing_consumes_nothing
    parser = Spindle::HTTP::Parser.new
    assert_equal [0, :head, false], [parser.execute(String.new, 0, String.new), parser.state, parser.head_complete?]
  end

  def test_pipelined_requests_in_one_buffer
    first = Wire.post("Content-Length: 2", body: "hi")
    second = Wire.request("GET /second HTTP/1.1", "Host: example.com", "Connection: close")
    data = first + second
    parser = Spindle::HTTP::Parser.new
    body = String.new

    offset = run_to_done(parser, data, 0, body)
    assert_equal [first.bytesize, "hi", "POST"], [offset, body, parser.env["REQUEST_METHOD"]]

    parser.reset
    body.clear
    assert_equal data.bytesize, run_to_done(parser, data, offset, body)
    assert_equal ["GET", "/second", "", false],
                 [parser.env["REQUEST_METHOD"], parser.env["PATH_INFO"], body, parser.keep_alive?]
    refute parser.env.key?("CONTENT_LENGTH"), "nothing leaks from the first request"
  end

  def test_pipelined_buffer_stops_at_first_message_however_cut
    first = Wire.chunked("2\r\nhi\r\n0\r\n\r\n")
    result = assert_accepted(first + Wire.get)
    assert_equal [first.bytesize, "hi"], [result.consumed, result.body]
  end

  private

  def parser_env(bytes)
    parser = Spindle::HTTP::Parser.new
    run_to_done(parser, bytes.dup, 0, String.new)
    parser.env
  end

  def run_to_done(parser, data, offset, body)
    until parser.done? || offset == data.bytesize
      after = parser.execute(data, offset, body)
      assert_operator after, :>, offset, "execute makes progress"
      offset = after
    end
    assert parser.done?, "message complete"
    offset
  end
end
