# frozen_string_literal: true

require_relative "proxy_header"

module Spindle
  module HTTP
    # The bytes read from a connection's socket (@io) and not yet parsed, and
    # how far the parser has got into them: mixed into Connection rather than
    # an object of its own, because the engines ask #buffered? several times
    # per request, and delegating cost the blocking engine 10 more method calls
    # per request (counted with a TracePoint). One 16 KiB buffer serves a
    # connection that sends a request and waits; a second one is allocated
    # only when a client pipelines (bytes arrive while unparsed ones remain).
    module ReadBuffer
      SIZE = 16 * 1024
      READ_ERRORS = [Errno::ECONNRESET, Errno::EPIPE, Errno::ETIMEDOUT, IOError].freeze

      # Reads what the socket has, without waiting: :data, :wait or :eof. A
      # TLS read may answer :wait_writable (it must write first): a wait too.
      def read_nonblock
        got = @offset < @buffer.bytesize ? append : refill
        handshake_done if @handshaking && @io.established? # Connection's: TLS only
        return :data if got.is_a?(String)

        got.nil? ? :eof : :wait
      rescue *READ_ERRORS
        :eof
      end

      # True when bytes are here that the parser has not taken (pipelining),
      # or, on TLS, decrypted and waiting in OpenSSL, where epoll cannot see
      # them (TLS::Socket#buffered?).
      def buffered? = @offset < @buffer.bytesize || (@tls && @io.buffered?)

      private

      # True when the buffer holds bytes the parser has not taken. Not
      # #buffered?: bytes still in OpenSSL are not in the buffer to parse.
      def unparsed? = @offset < @buffer.bytesize

      def init_read_buffer
        @buffer = String.new(capacity: SIZE, encoding: Encoding::BINARY)
        @offset = 0
        @scratch = nil
      end

      # Runs parser over the unparsed bytes, body bytes going into body.
      def parse_buffered(parser, body)
        @offset = parser.execute(@buffer, @offset, body)
      end

      # Takes a PROXY protocol header from the front of the unparsed bytes:
      # its ProxyHeader::Result once it is whole, nil while more is to come.
      # Raises ProxyHeader::Error for anything else.
      def parse_proxy_header
        result, after = ProxyHeader.parse(@buffer, @offset)
        @offset = after if result
        result
      end

      # Between requests: start again at the front once everything is parsed.
      def rewind_if_consumed
        return if @offset < @buffer.bytesize

        @buffer.clear
        @offset = 0
      end

      # Frees the buffers now rather than at the next GC sweep, so a closed
      # connection's 16 KiB stops counting towards Ruby's malloc increase
      # (docs/MEMORY.md, docs/REFORKING.md).
      def release_read_buffer
        @buffer.clear
        @scratch&.clear
        @offset = 0
      end

      def refill
        @offset = 0
        got = @io.read_nonblock(SIZE, @buffer, exception: false)
        @buffer.clear unless got.is_a?(String)
        got
      end

      def append
        @scratch ||= String.new(capacity: SIZE, encoding: Encoding::BINARY)
        got = @io.read_nonblock(SIZE, @scratch, exception: false)
        @buffer << got if got.is_a?(String)
        got
      end
    end
  end
end
