# frozen_string_literal: true

require "socket"

module Spindle
  module Engine
    # Which connections to close when a new client arrives at the connection
    # cap (--max-connections): those idle the longest, as nginx reuses its
    # oldest keep-alive connections. Without this, clients that open
    # connections and leave them idle hold every slot, and real users wait in
    # the backlog until they time out.
    #
    # Idle means #idle?: between requests, no byte of the next one read, no
    # output owed. That includes a connection that
    # never sent a request: its deadline until a first byte is the keep-alive
    # timeout (header_timeout starts only at that byte), so exempting it would
    # let a client that connects and sends nothing hold a slot for the whole
    # keep-alive timeout, and a few thousand such clients lock everyone out.
    # Oldest first keeps the risk to a real new client small: it is accepted
    # last, so it is the last candidate, and a connection whose client has
    # sent bytes we have not read yet is never chosen (#quiet?).
    module Eviction
      # At most this many at once: a burst of new clients then costs one scan
      # of the connections per batch, not per client (nginx closes up to 32).
      BATCH = 32
      NONE = [].freeze

      module_function

      # Idle with nothing in hand or owed: what a server at its cap may close.
      def idle?(conn) = conn.idle? && !conn.outbox.pending? && !conn.buffered?

      # True when no byte the client sent waits on the socket unread, so closing
      # now fails no request it has sent. A peek: nothing is consumed, and it
      # never waits (not even under a Fiber::Scheduler, unlike #wait_readable).
      def quiet?(conn)
        peeked = conn.io.recv_nonblock(1, Socket::MSG_PEEK, exception: false)
        peeked == :wait_readable || peeked.nil? || peeked.empty? # nil or "": the client closed (3.3, 3.1)
      rescue IOError, SystemCallError
        true # closed or reset: nothing there to fail
      end

      # The connections to close so that one more fits, oldest idle first:
      # about one in eight of the idle ones, 1 to BATCH. Empty when none is
      # idle. A block, when given, narrows the candidates further.
      def pick(connections)
        idle = connections.select { |conn| idle?(conn) && (!block_given? || yield(conn)) }
        return NONE if idle.empty?

        idle.sort_by! { |conn| conn.marks.idle_since }.lazy.select { |conn| quiet?(conn) }.first((idle.size / 8).clamp(1, BATCH))
      end
    end
  end
end
