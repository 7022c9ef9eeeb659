# frozen_string_literal: true

require_relative "lingering_close"

module Spindle
  module Engine
    # Every connection a serving loop has open, and the one way one leaves
    # it: #retire (or #close), with the reason. Whatever holds a connection
    # meanwhile (the selector engines' Selection, the threads engine's pool
    # threads, Park and Mailbox, a FiberLoop's fiber) holds it for this
    # object, which counts it from its accept (#add) to its close. So who
    # closes a connection, and why, is asked here alone: each reason to
    # close is named here once, and what it means for the client (a close
    # that lingers or one at once) is decided here once, for both engine
    # families. A connection leaves once: a second #retire or #close finds
    # it gone and does nothing, and one the app took over (rack.hijack,
    # #release) is neither counted nor closed any more.
    #
    # One per loop: the blocking and threads engines' SelectorLoop, each
    # FiberLoop (one for fibers, one per hybrid loop, on that loop's
    # thread: the loop's cap and drain are its own). The threads engine's
    # pool threads and its reactor thread share theirs; a Mutex guards the
    # table's changes, twice in a connection's life (its add and its close),
    # never per request. #count reads without it.
    #
    # A reason says whether the client may still be sending, and so how the
    # connection ends:
    #
    #   done          the response said "connection: close" (the app, the
    #                 keep-alive limit, a drain)              lingers
    #   refused       an error answer (400, 408, 413, 431 ...) to a request
    #                 whose rest may be on its way            lingers
    #   deadline      idle past its keep-alive deadline, or owed a response
    #                 the client did not take in time         closes now
    #   idle_draining idle while the process drains           closes now
    #   evicted       idle, at the cap, for a new client      closes now
    #   no_fds        out of file descriptors: the longest idle goes
    #                                                          closes now
    #   write_failed  the client is gone mid-response         closes now
    #   client_closed end of stream from the client           closes now
    #   bad_proxy_header no valid PROXY header: no HTTP is answered
    #                                                          closes now
    #   failed        an error in the engine (logged)         closes now
    #   stopped       the engine ends with it still open      closes now
    #
    # Where the client may still be sending, the rest of the output goes out
    # first, then the close lingers (LingeringClose) so a reset does not
    # discard the responses just written. Both depend on what holds the
    # connection, which answers:
    #
    #   owe(conn)     conn's output is to go out before it closes: true once
    #                 it is out (the caller's fiber wrote it), false when
    #                 the holder writes it later and retires conn then (or
    #                 the client is gone, and the holder closed it)
    #   linger(conn)  conn's close lingers: the holder drops its input until
    #                 LingeringClose says :close or its deadline passes
    #
    # The connection stays here (open, counted) while its output goes out
    # and while its close lingers.
    class Connections
      LINGERING = { done: true, refused: true }.freeze
      AT_ONCE = %i[deadline idle_draining evicted no_fds write_failed client_closed bad_proxy_header failed
                   stopped].freeze
      REASONS = (LINGERING.keys + AT_ONCE).freeze

      # The client may still be sending when a connection closes for reason.
      def self.lingers?(reason) = LINGERING.key?(reason)

      def initialize
        @open = {}.compare_by_identity # Connection => true
        @lock = Thread::Mutex.new
      end

      # conn was accepted: it is the loop's from here until it leaves.
      # Returns conn.
      def add(conn)
        @lock.synchronize { @open[conn] = true }
        conn
      end

      # Open connections, whoever holds them. Read without the lock: one a
      # thread adds or closes meanwhile may be counted or not.
      def count = @open.size
      def empty? = @open.empty?
      def include?(conn) = @open.key?(conn)

      # A copy: the table may change while it is looked over.
      def to_a = @lock.synchronize { @open.keys }
      def each(&) = to_a.each(&)

      # Ends conn for reason, held by holder (see above). False: conn reads
      # no request any more. Nothing once conn has left.
      def retire(conn, reason, holder)
        return false unless @open.key?(conn)
        return close(conn, reason) unless LINGERING.key?(reason)
        return false if conn.outbox.pending? && !holder.owe(conn)
        return close(conn, reason) unless conn.lingering? || LingeringClose.start(conn) == :linger

        holder.linger(conn)
        false
      end

      # Closes conn now: every connection a loop closes is closed here, and
      # reason names why (see above). Nothing once conn has left: whoever
      # took it from the table closes it. False, as #retire.
      def close(conn, _reason)
        conn.close if take(conn)
        false
      end

      # The app took conn's socket over (rack.hijack, full or partial): the
      # loop no longer counts it, and never closes it.
      def release(conn)
        take(conn)
        nil
      end

      # Closes an accepted socket that never became a connection (its fiber
      # did not start).
      def discard(socket, _reason)
        socket.close
        false
      end

      private

      # True for the one caller that takes conn out.
      def take(conn) = @lock.synchronize { @open.delete(conn) }
    end
  end
end
