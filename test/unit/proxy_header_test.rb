# frozen_string_literal: true

require "test_helper"
require "spindle/http/proxy_header"
require_relative "../support/proxy_protocol_vectors"

# HTTP::ProxyHeader over every vector of ProxyProtocolVectors, whole and
# split at every byte offset: a valid header is never taken before its last
# byte and always taken at it, with the bytes after it left alone; a bad one
# is refused at the latest once it is whole, and never taken.
class ProxyHeaderTest < Minitest::Test
  ProxyHeader = Spindle::HTTP::ProxyHeader
  V = ProxyProtocolVectors
  AFTER = "GET / HTTP/1.1\r\n".b

  V::VALID.each do |name, (bytes, addr, port)|
    define_method("test_valid_#{name}_whole_and_at_every_split") do
      (0...bytes.bytesize).each do |cut|
        assert_nil ProxyHeader.parse(bytes.byteslice(0, cut), 0), "#{name}: taken after #{cut} bytes"
      end
      result, after = ProxyHeader.parse(bytes + AFTER, 0)
      assert_equal [addr, port, bytes.bytesize], [result.remote_addr, result.remote_port, after], name
      # At an offset inside a larger buffer too (the read buffer's).
      _, after = ProxyHeader.parse("xx".b + bytes, 2)
      assert_equal bytes.bytesize + 2, after
    end
  end

  V::INVALID.each do |name, bytes|
    define_method("test_invalid_#{name}_is_refused_at_every_split") do
      refused_at = nil
      (1..bytes.bytesize).each do |cut|
        ProxyHeader.parse(bytes.byteslice(0, cut), 0)
      rescue ProxyHeader::Error
        refused_at = cut
        break
      end
      assert refused_at, "#{name}: never refused (#{bytes.inspect})"
      assert_raises(ProxyHeader::Error, name) { ProxyHeader.parse(bytes + AFTER, 0) }
    end
  end

  def test_an_oversized_v2_is_refused_from_its_fixed_part_alone
    head = V.v2_fixed(command: 1, family: 0x11, length: ProxyHeader::V2_MAX_PAYLOAD + 1)
    assert_raises(ProxyHeader::Error) { ProxyHeader.parse(head, 0) }
  end

  def test_a_v1_line_without_its_end_is_refused_at_107_bytes
    line = "PROXY TCP4 #{'1' * 200}".b
    assert_nil ProxyHeader.parse(line.byteslice(0, 106), 0)
    assert_raises(ProxyHeader::Error) { ProxyHeader.parse(line.byteslice(0, 107), 0) }
  end

  def test_the_longest_v1_line_is_taken
    line = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n".b
    assert_equal 104, line.bytesize
    result, = ProxyHeader.parse(line, 0)
    assert_equal "65535", result.remote_port
  end

  def test_nothing_yet_is_no_answer
    assert_nil ProxyHeader.parse("".b, 0)
    assert_nil ProxyHeader.parse("ab".b, 2)
  end
end
