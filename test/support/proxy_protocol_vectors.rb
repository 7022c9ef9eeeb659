# frozen_string_literal: true

require "ipaddr"

# PROXY protocol headers (HAProxy's spec, v1 and v2) for the unit and the
# integration tests: valid ones with the client each names, and the bad-input
# classes (docs/SECURITY.md) a PROXY bind must refuse.
module ProxyProtocolVectors
  SIGNATURE = "\r\n\r\n\x00\r\nQUIT\n".b

  module_function

  def v2_fixed(command:, family:, length:, version: 2)
    SIGNATURE + [(version << 4) | command, family, length].pack("CCn")
  end

  # family: 0x11 TCP over IPv4, 0x21 TCP over IPv6, 0x31 unix stream, 0x00 unspecified.
  def v2(command: 1, family: 0x11, addresses: nil, tlvs: "".b, length: nil)
    payload = (addresses || "".b) + tlvs
    v2_fixed(command: command, family: family, length: length || payload.bytesize) + payload
  end

  def inet4(source, destination, sport, dport)
    IPAddr.new(source).hton + IPAddr.new(destination).hton + [sport, dport].pack("nn")
  end

  def inet6(source, destination, sport, dport)
    IPAddr.new(source).hton + IPAddr.new(destination).hton + [sport, dport].pack("nn")
  end

  # A TLV: type, 16-bit length, value.
  def tlv(type, value) = [type, value.bytesize].pack("Cn") + value.b

  V4 = inet4("192.0.2.10", "198.51.100.1", 56_324, 443)
  V6 = inet6("2001:db8::10", "2001:db8::1", 40_000, 443)

  # name => [bytes, REMOTE_ADDR the header names (nil: keep the peer), REMOTE_PORT]
  VALID = {
    "v1_tcp4" => ["PROXY TCP4 192.0.2.10 198.51.100.1 56324 443\r\n".b, "192.0.2.10", "56324"],
    "v1_tcp6" => ["PROXY TCP6 2001:db8::10 2001:db8::1 40000 443\r\n".b, "2001:db8::10", "40000"],
    "v1_unknown" => ["PROXY UNKNOWN\r\n".b, nil, nil],
    "v1_unknown_with_addresses" => ["PROXY UNKNOWN ffff:: ffff:: 1 2\r\n".b, nil, nil],
    "v2_tcp4" => [v2(addresses: V4), "192.0.2.10", "56324"],
    "v2_tcp6" => [v2(family: 0x21, addresses: V6), "2001:db8::10", "40000"],
    "v2_tcp4_with_tlvs" => [v2(addresses: V4, tlvs: tlv(0x05, "unique-id-123") + tlv(0x04, "\x00" * 7)),
                            "192.0.2.10", "56324"],
    "v2_local" => [v2(command: 0, family: 0x00), nil, nil],
    "v2_local_with_an_address_block" => [v2(command: 0, family: 0x11, addresses: V4), nil, nil],
    "v2_unspec" => [v2(family: 0x00, addresses: "".b), nil, nil],
    "v2_unix" => [v2(family: 0x31, addresses: "\x00".b * 216), nil, nil],
  }.freeze

  # name => bytes: each must be refused (connection closed, no HTTP answer).
  INVALID = {
    "http_request" => "GET / HTTP/1.1\r\nHost: x\r\n\r\n".b,
    "tls_client_hello" => "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".b,
    "lowercase_proxy" => "proxy TCP4 192.0.2.10 198.51.100.1 1 2\r\n".b,
    "v1_no_space_after_proxy" => "PROXYTCP4 192.0.2.10 198.51.100.1 1 2\r\n".b,
    "v1_unknown_family" => "PROXY TCP5 192.0.2.10 198.51.100.1 1 2\r\n".b,
    "v1_empty_family" => "PROXY \r\n".b,
    "v1_missing_port" => "PROXY TCP4 192.0.2.10 198.51.100.1 1\r\n".b,
    "v1_extra_field" => "PROXY TCP4 192.0.2.10 198.51.100.1 1 2 3\r\n".b,
    "v1_double_space" => "PROXY TCP4  192.0.2.10 198.51.100.1 1 2\r\n".b,
    "v1_bad_ipv4" => "PROXY TCP4 192.0.2.256 198.51.100.1 1 2\r\n".b,
    "v1_leading_zero_ipv4" => "PROXY TCP4 192.0.02.1 198.51.100.1 1 2\r\n".b,
    "v1_ipv6_as_tcp4" => "PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n".b,
    "v1_ipv4_as_tcp6" => "PROXY TCP6 192.0.2.10 198.51.100.1 1 2\r\n".b,
    "v1_port_too_large" => "PROXY TCP4 192.0.2.10 198.51.100.1 65536 2\r\n".b,
    "v1_port_leading_zero" => "PROXY TCP4 192.0.2.10 198.51.100.1 0443 2\r\n".b,
    "v1_port_sign" => "PROXY TCP4 192.0.2.10 198.51.100.1 +1 2\r\n".b,
    "v1_bare_lf" => "PROXY TCP4 192.0.2.10 198.51.100.1 1 2\n".b,
    "v1_bare_cr" => "PROXY TCP4 192.0.2.10\r198.51.100.1 1 2\r\n".b,
    "v1_nul" => "PROXY TCP4 192.0.2.10\x00 198.51.100.1 1 2\r\n".b,
    "v1_oversized" => "PROXY UNKNOWN #{'x' * 120}\r\n".b,
    "v1_endless" => "PROXY TCP4 #{'9' * 300}".b,
    "v2_version_1" => v2_fixed(command: 1, family: 0x11, length: 12, version: 1) + V4,
    "v2_version_3" => v2_fixed(command: 1, family: 0x11, length: 12, version: 3) + V4,
    "v2_command_2" => v2(command: 2, addresses: V4),
    "v2_family_4" => v2(family: 0x41, addresses: V4),
    "v2_datagram" => v2(family: 0x12, addresses: V4),
    "v2_truncated_ipv4_block" => v2(addresses: V4.byteslice(0, 8)),
    "v2_truncated_ipv6_block" => v2(family: 0x21, addresses: V6.byteslice(0, 20)),
    "v2_oversized_length" => v2_fixed(command: 1, family: 0x11, length: 65_535),
    "v2_bad_signature" => "\r\n\r\n\x00\r\nQUIT!".b + "\x21\x11\x00\x0c".b + V4,
  }.freeze
end
