# frozen_string_literal: true

require_relative "../boot/native"

module Spindle
  module HTTP
    # The part of a file body (a Rack body with #to_path: Rack::Files, Rails'
    # send_file) that the client has not taken yet: the open file, whose
    # position is where the next byte comes from, and how many bytes are
    # still owed. It waits in a connection's Engine::Outbox instead of the
    # bytes, so a slow reader of a 100 MB file holds a descriptor, not
    # 100 MB of memory, and no thread: the bytes go from the page cache to
    # the socket with sendfile(2) whenever the socket has room.
    class FileBody
      # Raised when the file ends before the length the head announced: the
      # client cannot tell where the response ends, so the connection closes
      # (an IOError, like a client gone: every writer already closes then).
      class Truncated < IOError; end

      # What a waiting file counts in the OutputBudget: not its bytes (they
      # stay on disk and in the kernel's page cache) but what it costs the
      # process: a descriptor, this object and a copy buffer on the fallback.
      COST = 16 * 1024
      # The most one fallback copy reads at a time.
      COPY_SIZE = 64 * 1024
      # sendfile(2) moves at most this much per call on Linux anyway.
      MAX_SEND = 0x7ffff000

      # sendfile(2) on a non-blocking socket, from the extension
      # (ext/spindle/sendfile.c): IO.copy_stream waits for the client when
      # the socket is full (it blocks the thread), and Ruby has no
      # non-blocking sendfile of its own. Off Linux, or with no extension
      # built, the copy fallback below.
      SENDFILE = Native.extension_loaded? && respond_to?(:sendfile)

      attr_reader :remaining

      # file: open, at the first byte to send; it is this object's to close.
      def initialize(file, length)
        @file = file
        @remaining = length
        @buffer = nil
      end

      # Sends what the socket takes now, never waiting: :done once the whole
      # length is out (the file is then closed), :wait while the socket is
      # full. Raises Truncated when the file ends early.
      def send_nonblock(io)
        while @remaining.positive?
          sent = SENDFILE && io.is_a?(BasicSocket) ? sendfile_to(io) : copy(io)
          return :wait if sent == :wait_writable
          raise Truncated, "file ended #{@remaining} bytes short of its content-length" if sent.zero?

          @remaining -= sent
        end
        close
        :done
      end

      def close
        @file.close unless @file.closed?
      end

      private

      # The bytes the socket took, 0 when the file has ended, or
      # :wait_writable when it is full (EINTR is retried in the extension).
      def sendfile_to(io)
        FileBody.sendfile(io.fileno, @file.fileno, @remaining.clamp(0, MAX_SEND))
      end

      # Sockets sendfile cannot write to (TLS: the bytes must be encrypted in
      # this process): one buffer, reused; what the socket did not take is
      # read again next time (the file's position steps back).
      def copy(io)
        @buffer ||= String.new(capacity: COPY_SIZE, encoding: Encoding::BINARY)
        return 0 unless @file.read(@remaining.clamp(0, COPY_SIZE), @buffer)

        sent = io.write_nonblock(@buffer, exception: false)
        sent = 0 unless sent.is_a?(Integer) # :wait_writable (or a TLS socket's :wait_readable)
        @file.seek(sent - @buffer.bytesize, IO::SEEK_CUR) if sent < @buffer.bytesize
        sent.zero? ? :wait_writable : sent
      end
    end
  end
end
