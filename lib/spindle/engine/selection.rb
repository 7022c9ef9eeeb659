# frozen_string_literal: true

require "nio"
require_relative "timeouts"
require_relative "lingering_close"
require_relative "connections"

module Spindle
  module Engine
    # An epoll selector (nio4r) with the listeners and connections it watches,
    # and their deadlines, asked of its Deadlines. The SelectorLoop (blocking
    # and threads engines) waits on one. Used from one thread only, but for
    # #wakeup.
    #
    # A connection is watched either for its next request (readable) or, while
    # the end of a response waits in its Outbox for a slow reader, for room to
    # write it (writable); #flush finishes such a response here, so no thread
    # waits on the client, and then acts on the response's outcome (the
    # Handler's): :keep_alive watches for the next request, :close closes.
    class Selection
      # writer: what words a 408 (Timeouts.expire); deadlines: Deadlines;
      # connections: the loop's Connections, which closes what this drops.
      def initialize(listeners, writer, deadlines, connections)
        @listeners = listeners
        @writer = writer
        @deadlines = deadlines
        @connections = connections
        @selector = NIO::Selector.new
        @conns = {}.compare_by_identity # socket => Connection
        @outcomes = {}.compare_by_identity # Connection => the outcome of the response it is writing
        @tls_writing = {}.compare_by_identity # TLS Connections watched for room to finish a read
        @accepting = false
        @next_expiry = 0
        @retire = ->(conn) { retire(conn, :refused) } # a 408's lingering close (Timeouts.expire)
      end

      def size = @conns.size
      def empty? = @conns.empty?
      # The connections watched (for the cap: ConnectionPolicy#room).
      def connections = @conns.each_value
      attr_reader :accepting
      alias accepting? accepting # an attribute reader's alias stays as cheap: asked after every select

      # Yields each ready Listener or Connection.
      def select(timeout)
        @selector.select(timeout) { |monitor| yield monitor.value }
      end

      # From any thread. A pool thread that finishes just as the loop ends
      # may call this after #close: nobody is left to wake, and raising would
      # kill that thread and fail the process (a refork's mold did).
      def wakeup
        @selector.wakeup
      rescue IOError
        nil
      end

      def watch(conn)
        @deadlines.renew(conn)
        adopt(conn)
      end

      # Watches conn for its next request under the deadline it has (one the
      # threads engine's Park gives back).
      def adopt(conn)
        @selector.register(conn.io, :r).value = conn
        @conns[conn.io] = conn
      end

      # Watches conn until its outbox is written, then acts on outcome (see
      # #flush).
      def watch_output(conn, outcome)
        @deadlines.renew(conn)
        @outcomes[conn] = outcome
        @selector.register(conn.io, :w).value = conn
        @conns[conn.io] = conn
      end

      # Writes what conn's outbox holds. True when the response is done and
      # conn is watched for its next request again; false while it waits for
      # the client, or when it was closed (client gone) or retired (:close
      # outcome).
      def flush(conn)
        case conn.outbox.flush_nonblock
        when :wait
          @deadlines.renew(conn)
          return false
        when :done
          outcome = @outcomes[conn]
          forget(conn)
          return retire(conn, :done) unless outcome == :keep_alive

          watch(conn)
          return true
        end
        drop(conn, :write_failed)
      end

      # Ends conn for reason (Connections#retire): to close once its
      # responses are out (:done, :refused: a :close outcome, a refused
      # request, a 408), or at once (any other reason). Takes conn whether
      # or not it is watched; one that lingers already (a pool thread began
      # it) is only watched. False: conn reads no request.
      def retire(conn, reason = :done)
        forget(conn)
        @connections.retire(conn, reason, self)
      end

      # Connections#retire's holder: the rest of the output is written
      # first (#watch_output), then conn retired again.
      def owe(conn)
        watch_output(conn, :close)
        false
      end

      # Connections#retire's holder: conn's close lingers while the client
      # may still be sending (LingeringClose), watched here for its input
      # until then (#linger_on).
      def linger(conn)
        @selector.register(conn.io, :r).value = conn
        @conns[conn.io] = conn
      end

      # A lingering connection's client sent more, or closed its side: what
      # came is dropped, and conn closed once its client is done.
      def linger_on(conn)
        drop(conn, :done) if LingeringClose.drain(conn) == :close
      end

      def forget(conn)
        @selector.deregister(conn.io)
        @conns.delete(conn.io)
        @outcomes.delete(conn)
        @tls_writing.delete(conn) unless @tls_writing.empty?
      end

      # After a read on a TLS connection still watched for its request: a
      # read that must write first (a handshake or key update the client is
      # slow to take) waits for room to write, since no byte will come until
      # the client has what we owe; once the read went through, for bytes
      # again. Not once its close lingers: that reads the socket itself.
      def follow_tls(conn)
        return unless @conns[conn.io].equal?(conn) && !@outcomes.key?(conn) && !conn.lingering?

        wants_write = conn.io.wants_write?
        return if wants_write == @tls_writing.key?(conn)

        @selector.deregister(conn.io)
        @selector.register(conn.io, wants_write ? :w : :r).value = conn
        wants_write ? @tls_writing[conn] = true : @tls_writing.delete(conn)
      end

      # Closes conn at once for reason (Connections::AT_ONCE), whether or
      # not it is watched.
      def drop(conn, reason)
        forget(conn)
        @connections.close(conn, reason)
      end

      # The app took conn's socket (rack.hijack): neither watched nor
      # counted any more (Connections#release).
      def release(conn)
        forget(conn)
        @connections.release(conn)
      end

      # Deadlines are whole seconds apart: look for missed ones at most this
      # often, not after every select (a scan costs one step per connection).
      EXPIRY_INTERVAL = 0.25

      # Closes what missed its deadline (408 mid-request, then a lingering
      # close); when draining, idle keep-alive connections at once.
      def expire(draining)
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC) # after every select: no Timeouts.now frames
        return if now < @next_expiry && !draining

        @next_expiry = now + EXPIRY_INTERVAL
        @conns.values.each do |conn|
          next unless @deadlines.expired?(conn, now, draining)

          forget(conn)
          Timeouts.expire(conn, @writer, @connections, @retire)
        end
      end

      # Out of descriptors: frees the one whose deadline is nearest.
      def drop_oldest
        conn = @conns.values.min_by { |c| c.marks.at }
        drop(conn, :no_fds) if conn
      end

      def watch_listeners
        return if @accepting

        @listeners.each { |l| @selector.register(l.io, :r).value = l }
        @accepting = true
      end

      def unwatch_listeners
        return unless @accepting

        @listeners.each { |l| @selector.deregister(l.io) }
        @accepting = false
      end

      def close
        @conns.each_value { |conn| @connections.close(conn, :stopped) }
        @conns.clear
        @selector.close
      end
    end
  end
end
