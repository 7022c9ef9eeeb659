# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench/http_probe"

class HttpProbeTest < Minitest::Test
  def test_parses_a_plain_response
    r = Bench::HttpProbe.parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    assert_equal [200, "hi"], [r.status, r.body]
  end

  def test_decodes_a_chunked_body
    r = Bench::HttpProbe.parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n6\r\n World\r\n0\r\n\r\n")
    assert_equal "Hello World", r.body
  end

  def test_rejects_what_is_not_http
    assert_nil Bench::HttpProbe.parse("garbage")
    assert_nil Bench::HttpProbe.parse(nil)
  end

  # wrk counts a 103 as a response (issue 16): the probe must see it, skip it
  # as a 1xx-aware client does, and refuse the server.
  EARLY_HINTS = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"

  def test_skips_interim_responses_and_names_them
    r = Bench::HttpProbe.parse("#{EARLY_HINTS}HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    assert_equal [200, "hi", [103]], [r.status, r.body, r.interim]
    assert_nil Bench::HttpProbe.parse(EARLY_HINTS), "a 1xx alone is no answer"
  end

  def test_refuses_a_server_that_sends_early_hints
    r = Bench::HttpProbe.parse("#{EARLY_HINTS}HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    assert_match(/sent 103 before its response/, Bench::HttpProbe.refusal(r, "hi"))
  end

  def test_accepts_a_plain_answer_and_refuses_a_wrong_one
    ok = Bench::HttpProbe.parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    assert_nil Bench::HttpProbe.refusal(ok, "hi")
    assert_nil Bench::HttpProbe.refusal(ok, nil)
    assert_match(/not the expected body/, Bench::HttpProbe.refusal(ok, "ho"))
  end
end
