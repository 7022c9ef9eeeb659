# frozen_string_literal: true

require "openssl"
require_relative "context_builder"

module Spindle
  module TLS
    # An accepted connection on an ssl:// bind, as the read and write paths
    # see it: HTTP::ReadBuffer and Engine::Outbox call #read_nonblock and
    # #write_nonblock with exception: false, exactly as on a plain socket, and
    # the engines wait with #wait_readable / #wait_writable.
    #
    # The handshake is driven by the first reads, never waited on: a read
    # before it is done takes one nonblocking step of it and answers
    # :wait_readable or :wait_writable like any read that found nothing. So
    # a stalled handshake is a slow client, under the same deadlines, on
    # every engine: the selector engines watch it; the fiber engines' fiber
    # yields in #wait_readable.
    #
    # Two things differ from a plain socket, and are handled here:
    # - a read may have to write first (the handshake, a key update the
    #   client asked for): #wants_write? says so, #wait_readable then waits
    #   for room to write, and the selector engines watch for it
    #   (Engine::Selection#follow_tls);
    # - OpenSSL keeps decrypted bytes of a record the last read did not take
    #   (#pending): epoll cannot see them, so #wait_readable and #buffered?
    #   look there first.
    #
    # An app that hijacks the connection gets this object: with the default
    # exception: true, both calls behave as OpenSSL::SSL::SSLSocket's own.
    class Socket < OpenSSL::SSL::SSLSocket
      # A handshake that fails (plain HTTP on this port, TLS 1.1, no shared
      # cipher or protocol, a refused client certificate) or a connection
      # that breaks: the read answers nil, end of stream, and the
      # connection closes.
      BROKEN = [OpenSSL::SSL::SSLError, ContextBuilder::NoCommonProtocol, EOFError, IOError, SystemCallError].freeze
      CLIENT_CERT = "SSL_CLIENT_CERT"

      def initialize(socket, context)
        super
        self.sync_close = true
        @established = false
        @wants_write = false
        @env = nil
      end

      # The connection's env template (Handler#open_connection): the client
      # certificate goes there once the handshake is done, for every request.
      attr_writer :env

      def established? = @established
      def wants_write? = @wants_write

      # Decrypted bytes are waiting in OpenSSL (no syscall will report them).
      def buffered? = pending.positive?

      def read_nonblock(maxlen, buffer = nil, exception: true)
        exception ? super : read_step(maxlen, buffer)
      end

      # A response before the handshake is done cannot be sent (the 408 of a
      # stalled handshake): IOError, which the writers take for a client gone.
      def write_nonblock(data, exception: true)
        exception ? super : write_step(data)
      end

      def wait_readable(timeout = nil)
        return self if pending.positive?

        @wants_write ? to_io.wait_writable(timeout) : to_io.wait_readable(timeout)
      end

      def wait_writable(timeout = nil) = to_io.wait_writable(timeout)

      # Engine::Eviction peeks (MSG_PEEK) to see whether the client sent
      # anything unread: decrypted bytes count, then what is on the socket.
      def recv_nonblock(size, flags = 0, buffer = nil, exception: true)
        return "\0" if pending.positive?

        to_io.recv_nonblock(size, flags, buffer, exception: exception)
      end

      def getpeername = to_io.getpeername

      # A lingering close (Engine::LingeringClose) shuts the write side, as
      # on a plain socket; the close_notify alert goes first, so the client
      # reads the end of the TLS stream, not a truncation (OpenSSL 3 takes an
      # end of stream without it for an error). Best effort: stop (which
      # #sysclose calls too) writes it once and drops OpenSSL's errors.
      def close_write
        stop if @established
        to_io.close_write
      end

      private

      def read_step(maxlen, buffer)
        return handshake(maxlen, buffer) unless @established

        got = sysread_nonblock(maxlen, buffer, exception: false)
        @wants_write = got == :wait_writable
        got
      rescue *BROKEN
        nil
      end

      # A write that wants a read (renegotiation, which the context refuses)
      # is reported as :wait_writable, the one answer writers wait on.
      def write_step(data)
        raise IOError, "TLS handshake not finished" unless @established

        got = syswrite_nonblock(data, exception: false)
        got == :wait_readable ? :wait_writable : got
      rescue OpenSSL::SSL::SSLError => e
        raise IOError, e.message
      end

      # One step of the server's handshake; once done, the read it stood in for.
      def handshake(maxlen, buffer)
        step = accept_nonblock(exception: false)
        unless step.equal?(self)
          @wants_write = step == :wait_writable
          return step
        end

        @established = true
        @wants_write = false
        record_client_cert
        read_step(maxlen, buffer)
      end

      def record_client_cert
        cert = peer_cert
        @env[CLIENT_CERT] = cert.to_pem.freeze if cert && @env
      end
    end
  end
end
