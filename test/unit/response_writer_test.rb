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
