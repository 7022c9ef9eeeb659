# frozen_string_literal: true

require "socket"

module Spindle
  class Listener
    # The bound TCP sockets for a host and port: one for every address the
    # host names, each in a socket of its own family (as Ruby's TCPServer
    # chooses). A name can resolve to several addresses, and which comes first
    # is the resolver's choice: glibc sorts ::1 before 127.0.0.1 (RFC 6724)
    # whatever order /etc/hosts lists them in. Binding only the first left
    # tcp://localhost on [::1] alone, refusing every client that asked for
    # 127.0.0.1 (curl, a health check, a proxy's upstream).
    #
    # localhost always includes both loopback addresses (RFC 6761 §6.3:
    # the name means this machine's loopback), as Puma binds them, since
    # clients such as curl and browsers try ::1 and 127.0.0.1 whatever
    # /etc/hosts says.
    #
    # Only an address this machine cannot have is skipped (IPv6 turned off,
    # an address not configured here), and only while another address binds.
    # Any other failure is the operator's to see at once: a port in use on
    # ::1 must not quietly leave the bind on 127.0.0.1 alone.
    module TcpBind
      module_function

      UNAVAILABLE = [Errno::EAFNOSUPPORT, Errno::EADDRNOTAVAIL, Errno::EPROTONOSUPPORT].freeze
      LOOPBACK = %w[::1 127.0.0.1].freeze
      # Port 0 binds the first address on a port the kernel picks, and the
      # others on that one; if it is taken on another address, pick again.
      PORT_ZERO_TRIES = 5

      # What a bind got: its sockets, in the resolver's order, and the
      # addresses it skipped, each with the error that says why.
      Result = Struct.new(:sockets, :skipped)

      # Raises what the last address raised when none could be bound, and
      # SocketError when host does not resolve.
      def open(host, port)
        addresses = addresses(host, port)
        tries = port.zero? ? PORT_ZERO_TRIES : 1
        begin
          bind_all(addresses)
        rescue Errno::EADDRINUSE
          retry if port.zero? && (tries -= 1).positive?
          raise
        end
      end

      # The addresses host names, each once, in the resolver's order.
      def addresses(host, port)
        found = Addrinfo.getaddrinfo(host, port, nil, :STREAM, nil, Socket::AI_PASSIVE)
        found += loopback(port) if host.casecmp?("localhost")
        found.uniq { |a| [a.afamily, a.ip_address] }
      end

      # A resolver without IPv6 may refuse even to parse ::1.
      def loopback(port)
        LOOPBACK.filter_map do |ip|
          Addrinfo.tcp(ip, port)
        rescue SocketError
          nil
        end
      end

      # addresses: Addrinfos, bound in order. With port 0, every one after the
      # first takes the port the first got, so a name means one port.
      def bind_all(addresses)
        result = Result.new([], [])
        addresses.each do |address|
          port = address.ip_port.zero? && result.sockets.first&.local_address&.ip_port
          result.sockets << bound(port ? address.family_addrinfo(address.ip_address, port) : address)
        rescue *UNAVAILABLE => e
          result.skipped << [address, e]
        end
        return result unless result.sockets.empty?

        raise result.skipped.last&.last || SocketError.new("no address to bind")
      rescue SystemCallError
        result.sockets.each(&:close)
        raise
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
