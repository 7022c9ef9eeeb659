# frozen_string_literal: true

require "test_helper"
require "support/handler_harness"

# The response writer through the handler: framing, bodyless responses, header
# safety, and body.close, with every app wrapped in Rack::Lint where it is valid.
class ResponseWriterTest < Minitest::Test
  include HandlerHarness

  GET = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"

  class Body
    attr_reader :closed

    def initialize(parts) = @parts = parts
    def each(&block) = @parts.each(&block)
    def close = @closed = true
  end

  def header(served, name) = served.headers.select { |n, _| n.casecmp?(name) }.map(&:last)

  def test_array_body_gets_content_length_and_keeps_alive
    served = serve(->(_) { [200, { "content-type" => "text/plain" }, ["ab", "cd"]] }, GET)
    assert_equal 200, served.status
    assert_equal ["4"], header(served, "content-length")
    assert_equal "abcd", served.body
    assert_equal :keep_alive, served.outcome
    assert_equal 1, header(served, "date").size
  end

  # The date's value is masked: the two responses may straddle a second.
  def without_date(served) = served.headers.map { |name, value| [name, name == "date" ? :date : value] }

  # (Frozen, so not an app's: Rack::Lint requires an unfrozen Hash.)
  def test_rendered_headers_go_out_as_the_same_hash_would
    fields = { "content-type" => "text/css", "content-length" => "2", "etag" => %("1-2") }
    plain = serve(->(_) { [200, fields, ["ab"]] }, GET)
    rendered = serve(->(_) { [200, Spindle::HTTP::HeaderLines::Rendered.new(fields), ["ab"]] }, GET, lint: false)
    assert_equal without_date(plain), without_date(rendered)
    assert_equal ["ab", :keep_alive], [rendered.body, rendered.outcome]
    assert_raises(ArgumentError) { Spindle::HTTP::HeaderLines::Rendered.new("connection" => "close") }
    assert_raises(ArgumentError) { Spindle::HTTP::HeaderLines::Rendered.new("x" => "a\rb") }
  end

  def test_enumerable_body_is_chunked_on_http11_and_closed
    body = Body.new(["hello", "", "world"])
    served = serve(->(_) { [200, {}, body] }, GET)
    assert_equal ["chunked"], header(served, "transfer-encoding")
    assert_equal "5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", served.body
    assert body.closed
  end

  def test_enumerable_body_is_close_delimited_on_http10
    served = serve(->(_) { [200, {}, Body.new(["a", "b"])] }, "GET / HTTP/1.0\r\n\r\n")
    assert_empty header(served, "transfer-encoding")
    assert_equal ["close"], header(served, "connection")
    assert_equal "ab", served.body
    assert_equal :close, served.outcome
  end

  def test_http10_keep_alive_on_request
    served = serve(->(_) { [200, {}, ["x"]] }, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert_equal ["keep-alive"], header(served, "connection")
    assert_equal :keep_alive, served.outcome
  end

  def test_head_has_no_body_but_keeps_declared_length
    app = ->(_) { [200, { "content-length" => "5" }, []] }
    served = serve(app, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert_equal ["5"], header(served, "content-length")
    assert_equal "", served.body.to_s
  end

  def test_204_and_304_have_no_body
    [204, 304].each do |status|
      served = serve(->(_) { [status, {}, []] }, GET)
      assert_equal status, served.status
      assert_equal "", served.body.to_s
      assert_empty header(served, "transfer-encoding")
    end
  end

  def test_array_header_values_become_repeated_lines
    served = serve(->(_) { [200, { "set-cookie" => ["a=1", "b=2"] }, []] }, GET)
    assert_equal ["a=1", "b=2"], header(served, "set-cookie")
  end

  def test_header_injection_is_never_written
    app = lambda do |_|
      [200, { "x-ok" => "fine", "x-bad" => "a\r\nInjected: yes", "bad name" => "v", "x-nul" => "a\0b" }, ["x"]]
    end
    served = serve(app, GET, lint: false)
    assert_equal ["fine"], header(served, "x-ok")
    refute_match(/Injected/, served.raw)
    assert_empty header(served, "x-bad")
    assert_empty header(served, "x-nul")
  end

  def test_rack2_newline_values_become_lines_of_the_same_field
    served = serve(->(_) { [200, { "Set-Cookie" => "a=1\nb=2" }, ["x"]] }, GET, lint: false)
    assert_equal ["a=1", "b=2"], header(served, "set-cookie")
  end

  def test_app_transfer_encoding_is_ignored
    served = serve(->(_) { [200, { "transfer-encoding" => "chunked" }, ["abc"]] }, GET, lint: false)
    assert_equal ["3"], header(served, "content-length")
    assert_empty header(served, "transfer-encoding")
  end

  def test_app_exception_is_a_500_without_backtrace
    served = serve(->(_) { raise "secret detail" }, GET)
    assert_equal 500, served.status
    refute_match(/secret detail|\.rb:\d+/, served.body)
    assert_match(/secret detail/, logged_errors)
  end

  def test_invalid_status_is_a_500
    served = serve(->(_) { [42, {}, ["x"]] }, GET, lint: false)
    assert_equal 500, served.status
  end

  def test_body_raising_mid_stream_closes_and_still_calls_close
    body = Body.new(["a"])
    def body.each
      yield "a"
      raise "boom"
    end
    served = serve(->(_) { [200, {}, body] }, GET)
    assert_equal :close, served.outcome
    assert body.closed
    refute_match(/0\r\n\r\n\z/, served.raw, "a failed stream must not look complete")
  end

  def test_declared_length_mismatch_closes_the_connection
    served = serve(->(_) { [200, { "content-length" => "10" }, ["short"]] }, GET, lint: false)
    assert_equal :close, served.outcome
  end

  # Bytes side by side on the wire, though String#<< refuses to join them:
  # a UTF-8 header with "é" and a binary body part, on each path (C; the Ruby
  # writer's, which a connection field sends it to; chunked).
  def test_non_ascii_headers_and_binary_bodies_go_out_together
    name = { "content-disposition" => "attachment; filename=\"r\u00e9sum\u00e9.pdf\"" }
    pdf = "%PDF\xff\xfe".b
    [{}, { "connection" => "close" }].each do |extra|
      served = serve(->(_) { [200, name.merge(extra), [pdf]] }, GET, lint: false)
      assert_equal 200, served.status
      assert_equal pdf, served.body.b
      assert_includes served.raw.b, "filename=\"r\u00e9sum\u00e9.pdf\"".b
    end
    served = serve(->(_) { [200, name.dup, Body.new([pdf])] }, GET)
    assert_equal "6\r\n#{pdf}\r\n0\r\n\r\n".b, served.body.b
  end

  # rackup adds Rack::Lint around an app that has its own: the inner one's
  # to_ary closes it, and the outer one's to_ary then calls its each. A
  # declared length is sent with each, so to_ary is never asked.
  def test_lint_inside_lint_with_a_declared_length
    inner = Rack::Lint.new(->(_) { [200, { "content-length" => "2" }, ["ok"]] })
    served = serve(inner, GET)
    assert_equal [200, "ok", :keep_alive], [served.status, served.body, served.outcome]
    assert_empty logged_errors
  end

  # to_ary is asked once, and what it returns must be an Array.
  def test_a_to_ary_that_is_not_an_array_is_a_500
    body = Object.new
    def body.to_ary = "not an array"
    def body.each = yield("x")
    served = serve(->(_) { [200, {}, body] }, GET, lint: false)
    assert_equal [500, :close], [served.status, served.outcome]
    assert_match(/to_ary returned String, not an Array/, logged_errors)
  end

  # A plain Hash may name the field twice in two cases: one length goes out.
  def test_a_second_content_length_is_dropped_and_logged
    headers = { "content-length" => "5", "Content-Length" => "7" }
    served = serve(->(_) { [200, headers, ["short"]] }, GET, lint: false)
    assert_equal [["content-length", "5"]], served.headers.select { |n, _| n.casecmp?("content-length") }
    assert_equal ["short", :keep_alive], [served.body, served.outcome]
    assert_match(/content-length "7" is a second length/, logged_errors)
  end

  def test_response_finished_callbacks_run_after_the_response
    seen = []
    app = lambda do |env|
      env["rack.response_finished"] << ->(_env, status, _headers, error) { seen << [status, error] }
      [201, {}, ["x"]]
    end
    serve(app, GET)
    assert_equal [[201, nil]], seen
  end

  def test_streaming_body_gets_the_socket_and_closes_after
    app = ->(_) { [200, {}, ->(stream) { stream.write("streamed") }] }
    served = serve(app, GET)
    assert_equal "streamed", served.body
    assert_equal :close, served.outcome
  end

  # Issue 11, item 12: Rack SPEC runs rack.response_finished callbacks in
  # reverse order of registration.
  def test_response_finished_callbacks_run_in_reverse_order
    order = []
    app = lambda do |env|
      3.times { |i| env["rack.response_finished"] << ->(*) { order << i } }
      [200, {}, ["x"]]
    end
    serve(app, GET)
    assert_equal [2, 1, 0], order
  end

  # Issue 11, item 13: a 1xx other than 101 is not a final status; sent as one,
  # the client waits on and takes the next response for this one's.
  def test_informational_final_status_is_a_500_that_closes
    [100, 102, 103].each do |status|
      served = serve(->(_) { [status, {}, []] }, GET, lint: false)
      assert_equal 500, served.status, "status #{status}:\n#{served.raw}"
      assert_equal ["close"], header(served, "connection")
      assert_equal :close, served.outcome
      assert_match(/invalid response to GET \/ \(no request id\): status #{status} is informational/, logged_errors)
    end
  end

  # Issue 11, item 14: no body, or a String body, is a 500 that says what the
  # app returned and what Rack requires; not a 200 cut short.
  def test_missing_or_string_body_is_a_500_that_says_why
    { [200, {}] => /the body is NilClass nil; Rack requires a body that responds to #each or #call/,
      [200, {}, "text"] => /the body is String "text"; Rack requires a body that responds to #each or #call/ }
      .each do |response, logged|
        served = serve(->(_) { response }, GET, lint: false)
        assert_equal 500, served.status, served.raw
        assert_equal ["close"], header(served, "connection")
        assert_match logged, logged_errors
        refute_match(/NoMethodError/, logged_errors)
      end
  end

  # Issue 11, item 15: RFC 9110 §15.3.6, a 205 sends no content.
  def test_205_has_no_body_and_a_zero_length
    app = ->(_) { [205, { "content-length" => "13" }, ["reset content"]] }
    served = serve(app, GET, lint: false)
    assert_equal 205, served.status
    assert_equal ["0"], header(served, "content-length")
    assert_equal "", served.body.to_s
    assert_equal :keep_alive, served.outcome
  end

  # Issue 11, item 16: a header the server cannot send is logged, by name.
  def test_non_string_header_value_is_dropped_with_a_log_line_naming_it
    app = ->(_) { [200, { "x-num" => 5, "x-ok" => "yes" }, ["x"]] }
    served = serve(app, GET, lint: false)
    assert_equal 200, served.status
    assert_empty header(served, "x-num")
    assert_equal ["yes"], header(served, "x-ok")
    assert_match(/app response to GET \/ \(no request id\): header x-num: the value is Integer 5; Rack requires a String/, logged_errors)
  end

  def test_unsafe_header_values_and_names_are_logged_when_dropped
    app = ->(_) { [200, { "x-bad" => "a\r\nInjected: yes", "bad name" => "v" }, ["x"]] }
    serve(app, GET, lint: false)
    assert_match(/header x-bad: the value has CR or NUL/, logged_errors)
    assert_match(/header name "bad name" is not a token/, logged_errors)
  end

  UPGRADE = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"

  # Issue 11, item 11: a 101 keeps the app's "connection: upgrade" (RFC 9110
  # §7.8), runs the streaming body on the socket, and ends the HTTP parsing.
  def test_101_with_a_streaming_body_keeps_connection_upgrade_and_runs_the_body
    body = ->(stream) { stream.write("upgraded bytes") }
    app = ->(_) { [101, { "upgrade" => "websocket", "connection" => "Upgrade" }, body] }
    served = serve(app, UPGRADE, lint: false)
    assert_equal 101, served.status
    assert_equal ["Upgrade"], header(served, "connection")
    assert_equal ["websocket"], header(served, "upgrade")
    assert_equal "upgraded bytes", served.body
    assert_equal :close, served.outcome, "the connection is no longer HTTP"
  end

  def test_101_without_connection_header_gets_one
    app = ->(_) { [101, { "upgrade" => "websocket" }, ->(stream) { stream.write("x") }] }
    served = serve(app, UPGRADE, lint: false)
    assert_equal ["upgrade"], header(served, "connection")
  end

  def test_101_with_partial_hijack_hands_over_the_socket
    takeover = lambda do |io|
      io.write("hijacked bytes")
      io.close
    end
    app = ->(_) { [101, { "upgrade" => "websocket", "connection" => "upgrade", "rack.hijack" => takeover }, []] }
    served = serve(app, UPGRADE, lint: false)
    assert_equal 101, served.status
    assert_equal ["upgrade"], header(served, "connection")
    assert_equal "hijacked bytes", served.body
    assert_equal :hijacked, served.outcome
  end

  def test_101_that_nothing_takes_over_or_that_was_not_asked_for_is_a_500
    upgrade = { "upgrade" => "websocket", "connection" => "upgrade" }
    stream = ->(io) { io.write("x") }
    [[UPGRADE, [101, upgrade, []], /nothing takes the connection over/],
     [UPGRADE, [101, { "connection" => "upgrade" }, stream], /no upgrade header/],
     [GET, [101, upgrade, stream], /the request did not ask for an upgrade/]].each do |request, response, logged|
      served = serve(->(_) { response }, request, lint: false)
      assert_equal 500, served.status, served.raw
      assert_match logged, logged_errors
    end
  end

  def test_env_is_complete_and_passes_lint
    env = nil
    serve(->(e) { env = e.dup; [200, {}, []] }, "POST /p?q=1 HTTP/1.1\r\nHost: ex.com:8080\r\nContent-Length: 2\r\n\r\nhi")
    assert_equal "ex.com", env["SERVER_NAME"]
    assert_equal "8080", env["SERVER_PORT"]
    assert_equal "/p", env["PATH_INFO"]
    assert_equal "q=1", env["QUERY_STRING"]
    assert_equal "hi", env["rack.input"].read
    assert_equal false, env["rack.multithread"]
    assert_equal "127.0.0.1", env["REMOTE_ADDR"]
  end

  def test_large_body_is_spooled_to_a_tempfile
    input_class = nil
    body = "x" * 5000
    app = ->(env) { input_class = env["rack.input"].class; [200, {}, [env["rack.input"].read.bytesize.to_s]] }
    served = serve(app, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n#{body}",
                   lint: false, body_spool_threshold: 1000)
    assert_equal "5000", served.body
    assert_equal File, input_class
  end
end

# Out-of-band GC runs after the response, every N requests.
class OutOfBandGCTest < Minitest::Test
  include HandlerHarness

  def test_full_gc_every_n_requests_after_the_response
    before = GC.stat(:major_gc_count)
    3.times { serve(->(_) { [200, {}, ["x"]] }, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", oob_gc_every: 1) }
    assert_operator GC.stat(:major_gc_count), :>=, before + 3
  end
end
