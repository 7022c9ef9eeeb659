# frozen_string_literal: true

require_relative "deadlines"

module Spindle
  module Engine
    # How a connection closes while its client may still be sending (RFC 9112
    # §9.6): after the last response of --max-keepalive-requests with more
    # requests pipelined behind it, after an error response (400, 408, 413,
    # 431 ...) to a request whose rest is on its way, after a response that
    # says "connection: close" while the next request was already sent.
    # Closing a socket with unread input makes the kernel send a reset, and a
    # reset discards what the client has not read yet: the responses written
    # just before. So the close lingers, as nginx's and Apache's do: no
    # request is read any more, the write side is shut down (the client
    # reads every response, then end of stream), and what the client still
    # sends is read and dropped until it closes its side, or until the
    # bounds below; only then is the socket closed.
    #
    # This decides and drops; the engines watch a lingering connection the
    # way they watch any other, holding no thread and no app fiber on it:
    # the selector engines in their selector (Selection#retire), under the
    # deadline their expiry scan enforces (Connection#marks); the fiber
    # engines in the connection's own fiber, done with the app
    # (FiberLoop#retire), with #wait. It stays in their tables meanwhile,
    # so it counts towards --max-connections, and a drain waits for it
    # within its bounds.
    module LingeringClose
      # The client sent nothing this long (seconds): it has stopped sending.
      # What it sent before it saw our end of stream arrives within a round
      # trip. (Apache waits 2 s, nginx's lingering_timeout is 5.)
      IDLE = 2.0
      # The longest a connection lingers (nginx's lingering_time is 30), and
      # a stop waits on it: a client that keeps trickling bytes is cut off.
      MAX = 10.0
      # The most it reads and drops: a client that keeps sending at full speed
      # is cut off.
      BYTES = 4 * 1024 * 1024

      module_function

      # conn's responses are all out (its outbox is empty) and it is to close.
      # :close when the client sends nothing a close would cut (close it now:
      # the common case, a request that said "connection: close", costs one
      # read); :linger when it may still be sending: watch it for input and
      # call #drain when some arrives, until #drain says :close, or close it
      # at its deadline.
      def start(conn)
        unless conn.refused? || conn.buffered?
          got = conn.discard_input
          return :close unless got.is_a?(Integer)
        end
        now = Deadlines.now
        conn.stop_reading(BYTES, now + MAX)
        drain(conn, now)
      end

      # Waits (yielding, under a Fiber::Scheduler) until conn's client sends
      # more or its deadline passes: false once it passed. On the socket
      # itself: a TLS connection's undecrypted bytes are what is dropped.
      def wait(conn)
        left = conn.marks.at - Deadlines.now
        left.positive? && !conn.io.to_io.wait_readable(left).nil?
      rescue IOError
        false
      end

      # Drops what the client sent since: :linger while it may send more,
      # :close once it closed its side, or sent BYTES.
      def drain(conn, now = Deadlines.now)
        while (got = conn.discard_input).is_a?(Integer)
          return :close if (conn.linger_left -= got) <= 0
        end
        return :close unless got == :wait

        conn.marks.at = [now + IDLE, conn.linger_ends].min
        :linger
      end
    end
  end
end
