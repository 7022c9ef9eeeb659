# frozen_string_literal: true

require "socket"
require_relative "timeouts"

module Spindle
  module Engine
    # Which connections to close when a new client arrives at the connection
    # cap (ConnectionPolicy): the keep-alive connections idle the longest, as
    # nginx reuses its oldest keep-alive connections. Without this, clients
    # that open connections and leave them idle hold every slot, and real
    # users wait in the backlog until they time out.
    #
    # A keep-alive connection between requests may be closed by the server at
    # any time (RFC 9112 §9.3), and its client retries an idempotent request
    # on a new one; that is what makes it the one to close. It must be truly
    # between requests: no byte of the next one read (Connection#idle?), none
    # in hand, no output owed, and none waiting on the socket unread
    # (#quiet?): a request already sent would be failed, and closing a socket
    # with unread bytes resets it (RST) rather than ending it cleanly.
    #
    # A connection that has not sent its first request yet is not one of
    # them: its request is usually on its way (accepted before the client's
    # first write, or while the bytes are in flight), and its client has
    # nothing to retry on (closing them at the cap failed whole bursts of new
    # clients). It is closed only once it has been silent for
    # FIRST_REQUEST_GRACE, and after every keep-alive one: a client that
    # connects and sends nothing must not hold a slot for the whole
    # keep-alive timeout, or a few thousand of them lock everyone out.
    module Eviction
      # At most this many at once: a burst of new clients then costs one scan
      # of the connections per batch, not per client (nginx closes up to 32).
      BATCH = 32
      # Seconds a new connection may stay silent before it counts as a client
      # that sends nothing rather than one whose request is on its way: well
      # over a round trip and a lost segment's retransmission.
      FIRST_REQUEST_GRACE = 1.0
      NONE = [].freeze

      module_function

      # Between requests with nothing in hand or owed: a keep-alive connection,
      # or a new one silent past the grace. Never one whose close lingers
      # (LingeringClose): its client may still be reading the last responses,
      # which a reset would throw away.
      def idle?(conn, now = Timeouts.now)
        conn.idle? && !conn.lingering? && !conn.outbox.pending? && !conn.buffered? &&
          (conn.requests.positive? || now - conn.marks.idle_since >= FIRST_REQUEST_GRACE)
      end

      # True when no byte the client sent waits on the socket unread, so closing
      # now fails no request it has sent, and sends a FIN, not an RST. A peek:
      # nothing is consumed, and it never waits (not even under a
      # Fiber::Scheduler, unlike #wait_readable).
      def quiet?(conn)
        peeked = conn.io.recv_nonblock(1, Socket::MSG_PEEK, exception: false)
        peeked == :wait_readable || peeked.nil? || peeked.empty? # nil or "": the client closed (3.3, 3.1)
      rescue IOError, SystemCallError
        true # closed or reset: nothing there to fail
      end

      # May conn be closed now? Asked again just before closing it: its client
      # may have sent a request since it was picked.
      def closable?(conn, now = Timeouts.now) = idle?(conn, now) && quiet?(conn)

      # The connections to close so that one more fits: keep-alive ones
      # first, then new ones silent past the grace, each the longest idle
      # first; about one in eight of the candidates, 1 to BATCH. Empty when
      # none may go. A block, when given, narrows the candidates further.
      def pick(connections, now = Timeouts.now)
        idle = connections.select { |conn| idle?(conn, now) && (!block_given? || yield(conn)) }
        return NONE if idle.empty?

        idle.sort_by! { |conn| [conn.requests.positive? ? 0 : 1, conn.marks.idle_since] }
        idle.lazy.select { |conn| quiet?(conn) }.first((idle.size / 8).clamp(1, BATCH))
      end
    end
  end
end
