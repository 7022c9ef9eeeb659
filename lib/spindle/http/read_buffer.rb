# frozen_string_literal: true

module Spindle
  module HTTP
    # The bytes read from one connection and not yet parsed, and how far the
    # parser has got into them. One 16 KiB buffer serves a connection that
    # sends a request and waits; a second one is allocated only when a client
    # pipelines (bytes arrive while unparsed ones remain).
    class ReadBuffer
      SIZE = 16 * 1024
      READ_ERRORS = [Errno::ECONNRESET, Errno::EPIPE, Errno::ETIMEDOUT, IOError].freeze

      def initialize
        @bytes = String.new(capacity: SIZE, encoding: Encoding::BINARY)
        @offset = 0
        @scratch = nil
      end

      # Reads what io has, without waiting: :data, :wait or :eof. A TLS read
      # may answer :wait_writable (it must write first): a wait too.
      def fill(io)
        got = consumed? ? refill(io) : append(io)
        return :data if got.is_a?(String)

        got.nil? ? :eof : :wait
      rescue *READ_ERRORS
        :eof
      end

      # Runs parser over the unparsed bytes, body bytes going into body.
      def feed(parser, body)
        @offset = parser.execute(@bytes, @offset, body)
      end

      # True when bytes are here that the parser has not taken (pipelining).
      def buffered? = @offset < @bytes.bytesize

      def consumed? = !buffered?

      # Between requests: start again at the front once everything is parsed.
      def rewind_if_consumed
        return unless consumed?

        @bytes.clear
        @offset = 0
      end

      # Frees the buffers now rather than at the next GC sweep, so a closed
      # connection's 16 KiB stops counting towards Ruby's malloc increase
      # (docs/MEMORY.md, docs/REFORKING.md).
      def release
        @bytes.clear
        @scratch&.clear
        @offset = 0
      end

      private

      def refill(io)
        @offset = 0
        got = io.read_nonblock(SIZE, @bytes, exception: false)
        @bytes.clear unless got.is_a?(String)
        got
      end

      def append(io)
        @scratch ||= String.new(capacity: SIZE, encoding: Encoding::BINARY)
        got = io.read_nonblock(SIZE, @scratch, exception: false)
        @bytes << got if got.is_a?(String)
        got
      end
    end
  end
end
