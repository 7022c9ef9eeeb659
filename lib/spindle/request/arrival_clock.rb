# frozen_string_literal: true

require "socket"
require_relative "../boot/native"

module Spindle
  # When the kernel received a request's first byte, for its queue time
  # (TimedConnection). The server's own clock sees a request only once it
  # reads it, and a request that arrives while every thread (or the loop)
  # is busy waits unread in the kernel meanwhile: that wait went uncounted.
  # With one thread on a 1 s request, a keep-alive request sent 0.1 s into
  # it counted 0.0002 s, and was served under --max-queue-time 0.2.
  #
  # The listener asks the kernel to note each packet's arrival time
  # (SO_TIMESTAMPNS; accepted sockets inherit it), and the connection peeks
  # at its first unread byte's time before it reads (first_byte_at, in
  # ext/spindle/arrival_clock.c): one recvmsg per request, on plain TCP
  # connections and only while queue time is measured. TLS connections
  # count from the read, as before: their bytes wait in OpenSSL's buffer
  # too, where no arrival time is kept; so do Unix sockets'. The kernel
  # turns its packet clock on a moment after the first socket asks (a
  # deferred work item): a request that arrives in that moment counts from
  # its read too.
  module ArrivalClock
    module_function

    # Whether the kernel's times can be read here (Linux, the extension built).
    def available?
      Native.extension_loaded? && respond_to?(:first_byte_at) && Socket.const_defined?(:SO_TIMESTAMPNS)
    end

    # Asks the kernel to note the arrival time of each packet on the
    # sockets accepted from listener (a Listener) from now on. True when
    # it will; false without the extension, on a TLS or Unix listener
    # (a Unix stream socket tells no times), or when the socket refuses
    # the option.
    def stamp(listener)
      return false if listener.tls? || listener.unix? || !available?

      listener.io.setsockopt(Socket::SOL_SOCKET, Socket::SO_TIMESTAMPNS, true)
      true
    rescue SystemCallError, IOError
      false
    end

    # Whether socket (accepted) has the kernel note its arrival times: its
    # listener was stamped. Asked once per connection, so a connection
    # that cannot tell a time pays no peek per request.
    def stamped?(socket)
      available? && socket.getsockopt(Socket::SOL_SOCKET, Socket::SO_TIMESTAMPNS).bool
    rescue SystemCallError, IOError
      false
    end
  end
end
