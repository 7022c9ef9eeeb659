# frozen_string_literal: true

require "socket"

module Spindle
  class Listener
    # A bound TCP socket for a host and port: the first address the host
    # resolves to that this machine has, in getaddrinfo's order, each in a
    # socket of its own family (as Ruby's TCPServer chooses). A name can
    # resolve to IPv6 first: Debian's /etc/hosts lists "::1 localhost", so
    # tcp://localhost binds ::1 there and 127.0.0.1 where only that is listed.
    #
    # Only an address this machine cannot have moves on to the next one (IPv6
    # turned off, an address not configured here). Any other failure is the
    # operator's to see at once: a port in use on ::1 must not quietly become
    # a listener on 127.0.0.1 instead.
    module TcpBind
      module_function

      UNAVAILABLE = [Errno::EAFNOSUPPORT, Errno::EADDRNOTAVAIL, Errno::EPROTONOSUPPORT].freeze

      # Raises what the last address raised when none could be bound, and
      # SocketError when host does not resolve.
      def open(host, port)
        first_bound(Addrinfo.getaddrinfo(host, port, nil, :STREAM, nil, Socket::AI_PASSIVE))
      end

      # addresses: Addrinfos, tried in order.
      def first_bound(addresses)
        unavailable = nil
        addresses.each do |address|
          return bound(address)
        rescue *UNAVAILABLE => e
          unavailable = e
        end
        raise unavailable || SocketError.new("no address to bind")
      end

      def bound(address)
        socket = Socket.new(address.afamily, :STREAM)
        socket.setsockopt(:SOCKET, :REUSEADDR, true)
        socket.setsockopt(:IPV6, :V6ONLY, true) if address.ipv6? # [::] leaves 0.0.0.0 to its own bind
        socket.bind(address)
        socket
      rescue SystemCallError
        socket&.close
        raise
      end
    end
  end
end
