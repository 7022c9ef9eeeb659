# frozen_string_literal: true

require "test_helper"
require "spindle/listener"

# Listener::TcpBind: a host's addresses are tried in order, each in a socket
# of its own family; only an address this machine cannot have moves on to the
# next. Real sockets on loopback; 192.0.2.1 (TEST-NET-1) is never local.
class TcpBindTest < Minitest::Test
  TcpBind = Spindle::Listener::TcpBind

  def teardown
    @sockets&.each { |s| s.close unless s.closed? }
  end

  def test_an_ipv6_address_gets_an_ipv6_socket
    skip "no IPv6 loopback here" unless ipv6_loopback?
    socket = keep(TcpBind.first_bound([Addrinfo.tcp("::1", 0), Addrinfo.tcp("127.0.0.1", 0)]))

    assert_equal "::1", socket.local_address.ip_address
    assert_equal 1, socket.getsockopt(:IPV6, :V6ONLY).int
  end

  def test_an_address_not_on_this_machine_moves_on_to_the_next
    socket = keep(TcpBind.first_bound([Addrinfo.tcp("192.0.2.1", 0), Addrinfo.tcp("127.0.0.1", 0)]))

    assert_equal "127.0.0.1", socket.local_address.ip_address
  end

  def test_a_port_in_use_is_raised_not_moved_past
    taken = keep(TCPServer.new("127.0.0.1", 0))
    port = taken.local_address.ip_port

    assert_raises(Errno::EADDRINUSE) do # 127.0.0.2, also loopback, is free on that port
      keep(TcpBind.first_bound([Addrinfo.tcp("127.0.0.1", port), Addrinfo.tcp("127.0.0.2", port)]))
    end
  end

  def test_no_address_of_this_machine_says_so
    error = assert_raises(Spindle::Listener::Error) { Spindle::Listener.open("tcp://192.0.2.1:0", backlog: 8) }
    assert_match(/192\.0\.2\.1 is not an address of this machine/, error.message)
  end

  # Where /etc/hosts lists "::1 localhost" first (Debian's, and the Ruby 3.3
  # lane's chroot), an IPv4 socket given ::1 failed to bind at all
  # (EAFNOSUPPORT): rackup's default host broke the server.
  def test_localhost_binds_its_first_address_of_this_machine
    listener = Spindle::Listener.open("tcp://localhost:0", backlog: 8)
    keep(listener.io)
    first = Addrinfo.getaddrinfo("localhost", 0, nil, :STREAM).find { |a| bindable?(a) }

    assert_equal first.ip_address, listener.io.local_address.ip_address
    assert_equal "tcp://localhost:#{listener.server_port}", listener.uri
    TCPSocket.new(first.ip_address, listener.server_port).close # it accepts there
  end

  private

  def keep(socket)
    (@sockets ||= []) << socket
    socket
  end

  def ipv6_loopback?
    TCPServer.new("::1", 0).close
    true
  rescue SystemCallError
    false
  end

  def bindable?(address)
    socket = Socket.new(address.afamily, :STREAM)
    socket.bind(address)
    true
  rescue SystemCallError
    false
  ensure
    socket&.close
  end
end
