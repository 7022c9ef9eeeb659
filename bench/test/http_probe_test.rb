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
end
