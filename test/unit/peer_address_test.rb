# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/request/peer_address"

# REMOTE_ADDR from the raw sockaddr must read exactly as getnameinfo(3) has
# it (Socket.unpack_sockaddr_in, which Spindle no longer calls per
# connection): the same text for every address, IPv6's compression and its
# embedded IPv4 forms included.
class PeerAddressTest < Minitest::Test
  IPV6_EDGES = %w[
    :: ::1 ::2 ::ffff ::1:0 1:: 1::1 fe80:0:0:1:: 2001:db8::1 2001:db8:0:0:1:0:0:1 2001:0:0:1:0:0:0:1
    1:0:1:0:1:0:1:0 0:1:0:0:1:0:0:1 1:2:3:4:5:6:7:8 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
    ::ffff:127.0.0.1 ::ffff:0.0.0.0 ::ffff:0:0 ::1.2.3.4 ::0.0.1.2 ::ffff:1:2 0:0:0:0:0:fffe:102:304
    64:ff9b::192.0.2.33 ::ffff:0:1.2.3.4
  ].freeze

  def test_ipv4_reads_as_getnameinfo_has_it
    addresses = %w[0.0.0.0 127.0.0.1 255.255.255.255 10.0.0.1 192.168.100.200]
    addresses += Array.new(200) { Array.new(4) { rand(256) }.join(".") }
    addresses.each { |ip| assert_same_text Socket.sockaddr_in(rand(65_536), ip) }
  end

  def test_ipv6_reads_as_getnameinfo_has_it
    IPV6_EDGES.each { |ip| assert_same_text Socket.sockaddr_in(443, ip) }
  end

  def test_random_ipv6_with_runs_of_zeros_read_as_getnameinfo_has_them
    2_000.times do
      groups = Array.new(8) { rand < 0.5 ? 0 : rand(65_536) }
      assert_same_text Socket.sockaddr_in(80, groups.map { |g| g.to_s(16) }.join(":"))
    end
  end

  # Link-local with a scope id: getnameinfo names the interface; so does this.
  def test_a_scoped_address_still_asks_getnameinfo
    sockaddr = Socket.sockaddr_in(80, "fe80::1")
    sockaddr[24, 4] = [1].pack("L") # scope id 1: the loopback's interface index
    assert_same_text sockaddr
  end

  def test_a_connected_peer_reads_as_its_address
    server = TCPServer.new("127.0.0.1", 0)
    client = TCPSocket.new("127.0.0.1", server.addr[1])
    accepted = server.accept
    assert_equal "127.0.0.1", Spindle::PeerAddress.text(accepted.getpeername)
  ensure
    [accepted, client, server].compact.each(&:close)
  end

  private

  def assert_same_text(sockaddr)
    expected = Socket.unpack_sockaddr_in(sockaddr).last
    assert_equal expected, Spindle::PeerAddress.text(sockaddr), "for #{expected}"
  end
end
