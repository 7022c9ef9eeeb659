# frozen_string_literal: true

require "test_helper"
require "spindle/listener"

# Listener::TcpBind: every address a host names is bound, each in a socket of
# its own family; only an address this machine cannot have is skipped, and
# only while another binds. Real sockets on loopback; 192.0.2.1 (TEST-NET-1)
# is never local.
class TcpBindTest < Minitest::Test
  TcpBind = Spindle::Listener::TcpBind

  def teardown
    @sockets&.each { |s| s.close unless s.closed? }
  end

  def test_an_ipv6_address_gets_an_ipv6_socket
    skip "no IPv6 loopback here" unless ipv6_loopback?
    six, four = keep(TcpBind.bind_all([Addrinfo.tcp("::1", 0), Addrinfo.tcp("127.0.0.1", 0)]).sockets)

    assert_equal "::1", six.local_address.ip_address
    assert_equal 1, six.getsockopt(:IPV6, :V6ONLY).int
    assert_equal "127.0.0.1", four.local_address.ip_address
    assert_equal six.local_address.ip_port, four.local_address.ip_port, "port 0: one port for the name"
  end

  def test_an_address_not_on_this_machine_is_skipped_and_said
    bound = TcpBind.bind_all([Addrinfo.tcp("192.0.2.1", 0), Addrinfo.tcp("127.0.0.1", 0)])
    keep(bound.sockets)

    assert_equal ["127.0.0.1"], bound.sockets.map { |s| s.local_address.ip_address }
    assert_equal [["192.0.2.1", Errno::EADDRNOTAVAIL]], bound.skipped.map { |a, e| [a.ip_address, e.class] }
  end

  def test_a_port_in_use_is_raised_not_moved_past
    taken = TCPServer.new("127.0.0.1", 0)
    keep(taken)
    port = taken.local_address.ip_port

    assert_raises(Errno::EADDRINUSE) do # 127.0.0.2, also loopback, is free on that port, and bound first
      keep(TcpBind.bind_all([Addrinfo.tcp("127.0.0.2", port), Addrinfo.tcp("127.0.0.1", port)]).sockets)
    end
  end

  def test_no_address_of_this_machine_says_so
    error = assert_raises(Spindle::Listener::Error) { Spindle::Listener.open("tcp://192.0.2.1:0", backlog: 8) }
    assert_match(/192\.0\.2\.1 is not an address of this machine/, error.message)
  end

  # glibc sorts ::1 before 127.0.0.1 (RFC 6724), so where /etc/hosts lists
  # "::1 localhost" (Debian's, and the Ruby 3.3 lane's chroot) tcp://localhost
  # bound [::1] alone and refused every client of 127.0.0.1. localhost is
  # both loopback addresses, whatever /etc/hosts says.
  def test_localhost_binds_both_loopback_addresses
    notes = []
    listeners = Spindle::Listener.open("tcp://localhost:0", backlog: 8) { |note| notes << note }
    keep(listeners.map(&:io))
    port = listeners.first.server_port

    assert_equal ["127.0.0.1", *("::1" if ipv6_loopback?)].sort, listeners.map { |l| l.io.local_address.ip_address }.sort
    assert_equal [port], listeners.map(&:server_port).uniq, "one port for the name"
    assert_equal ["localhost"], listeners.map(&:server_name).uniq
    assert_includes listeners.map(&:uri), "tcp://127.0.0.1:#{port}"
    listeners.each { |l| TCPSocket.new(l.io.local_address.ip_address, port).close } # each accepts
    assert_empty notes if ipv6_loopback?
  end

  # The log line for an address skipped while others bound.
  def test_a_skipped_address_is_said_with_why
    failure = Spindle::Listener::BindFailure
    assert_equal "tcp://localhost:80: not listening on [::1]: IPv6 is off on this machine (address family not supported by protocol)",
                 failure.skipped("tcp://localhost:80", Addrinfo.tcp("::1", 80), Errno::EAFNOSUPPORT.new)
    assert_equal "tcp://web:80: not listening on 192.0.2.1: not an address of this machine",
                 failure.skipped("tcp://web:80", Addrinfo.tcp("192.0.2.1", 80), Errno::EADDRNOTAVAIL.new)
  end

  private

  def keep(sockets)
    (@sockets ||= []).concat(sockets.is_a?(Array) ? sockets : [sockets])
    sockets
  end

  def ipv6_loopback?
    TCPServer.new("::1", 0).close
    true
  rescue SystemCallError
    false
  end
end
