# frozen_string_literal: true

require "socket"

module Spindle
  # A TCP peer's address as text (REMOTE_ADDR), read from the raw sockaddr
  # that getpeername(2) returns, with the same text getnameinfo(3) would give.
  #
  # Not Socket.unpack_sockaddr_in: on Ruby 3.3 every getnameinfo runs in a
  # thread of its own, with the GVL let go meanwhile. That cost many times
  # what it costs on Ruby 3.1; every accepted connection paid it, and the
  # engines' accepting thread then waited for the GVL behind the others, so
  # a burst of new clients was taken in slowly and their first requests
  # waited (PERFORMANCE.md, "The figures behind lib/'s comments").
  #
  # A link-local IPv6 peer (a scope id) still goes through getnameinfo, which
  # names the interface; so does any family but IPv4 and IPv6, and any
  # sockaddr not laid out as Linux's (on BSD a length byte comes before the
  # family, so no family matches).
  module PeerAddress
    INET = Socket::AF_INET
    INET6 = Socket::AF_INET6
    INET_SIZE = 8 # family, port, 4 address bytes
    INET6_SIZE = 28 # family, port, flow info, 16 address bytes, scope id

    module_function

    # sockaddr: a packed struct sockaddr_in or sockaddr_in6 (binary String).
    def text(sockaddr)
      family = sockaddr.unpack1("S")
      if family == INET && sockaddr.bytesize >= INET_SIZE
        ipv4(sockaddr, 4)
      elsif family == INET6 && sockaddr.bytesize >= INET6_SIZE && sockaddr.unpack1("L", offset: 24).zero?
        ipv6(sockaddr.unpack("n8", offset: 8), sockaddr)
      else
        Socket.unpack_sockaddr_in(sockaddr).last
      end
    end

    def ipv4(bytes, at)
      "#{bytes.getbyte(at)}.#{bytes.getbyte(at + 1)}.#{bytes.getbyte(at + 2)}.#{bytes.getbyte(at + 3)}"
    end

    # RFC 5952's text: lower-case hex without leading zeros, the longest run
    # of two or more zero groups (the first of equal ones) as "::". As glibc
    # does, an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d)
    # address ends in dotted decimal.
    def ipv6(groups, sockaddr)
      start, length = longest_zero_run(groups)
      if start.zero? && (length == 6 || (length == 5 && groups[5] == 0xffff))
        return "::#{'ffff:' if length == 5}#{ipv4(sockaddr, 20)}"
      end
      return groups.map { |g| g.to_s(16) }.join(":") if length < 2

      head = groups[0, start].map { |g| g.to_s(16) }.join(":")
      tail = groups[(start + length)..].map { |g| g.to_s(16) }.join(":")
      "#{head}::#{tail}"
    end

    # [start, length] of the longest run of zero groups (the first of equal ones).
    def longest_zero_run(groups)
      best_start = best_length = 0
      start = nil
      groups.each_with_index do |group, i|
        if group.zero?
          start ||= i
          best_start, best_length = start, i - start + 1 if i - start + 1 > best_length
        else
          start = nil
        end
      end
      [best_start, best_length]
    end
  end
end
