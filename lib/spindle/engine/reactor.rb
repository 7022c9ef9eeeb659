# frozen_string_literal: true

require_relative "timeouts"

module Spindle
  module Engine
    # The threads engine's strategy for its SelectorLoop (the I/O thread). It
    # reads each request until it is complete (head and body), so a slow
    # client costs a registered socket, never a pool thread; a complete
    # request leaves the selector for the ThreadPool's queue. Between
    # selects it takes back, from the Mailbox, the connections a pool thread
    # could not park (Park): keep-alive ones are watched for their next
    # request, a response whose end a slow reader has not taken yet is
    # written here, then its outcome acted on, and a close that lingers
    # (LingeringClose) is watched here until it ends. Through the Mailbox
    # too (it holds no Park) it takes back parked connections idle for
    # Park::RECALL_AFTER, and all of them at the stop and at the connection
    # cap (#make_room).
    #
    # In a cluster, new connections are accepted while the pool has a spare
    # thread, so that they wait in the kernel's backlog, where a sibling
    # process can take them, instead of in a busy process; and while no
    # complete request waits for a thread. Without the second rule a pool
    # kept busy by the connections it already holds (a keep-alive client
    # served again and again) never looked at the listeners, and a new client
    # waited until that load ended.
    #
    # A busy pool declines for SIBLING_FIRST at most, then takes what is
    # still in the backlog for as long: a sibling with a spare thread wakes
    # well within that, so what is left means every sibling is busy too, and
    # waiting on helps nobody. Declining until the queue emptied kept new
    # clients in the backlog while every worker was busy, and the tail grew
    # far past the median (PERFORMANCE.md, "The figures behind lib/'s comments").
    #
    # A process serving alone accepts whenever the selector may: no sibling
    # can take a connection from the backlog, so waiting there helps nobody.
    # Under the cluster rule 64 keep-alive clients kept the queue from ever
    # emptying, and a client that connected waited up to seconds to be
    # accepted while the first ones were served again and again.
    class Reactor
      TICK = 0.5
      SIBLING_FIRST = 0.01

      # mailbox: the way back from the pool threads, and to the connections
      # they parked (taken back once idle for Park::RECALL_AFTER, and all of
      # them at the stop). alone: no sibling process shares the listeners.
      def initialize(selection, reader, deadlines, pool, mailbox, alone:)
        @alone = alone
        @next_recall = 0
        @selection = selection
        @reader = reader
        @deadlines = deadlines
        @pool = pool
        @mailbox = mailbox
        @busy_since = nil # when a busy pool began to decline new clients
      end

      # Reads what arrived; a complete request leaves the selector for the pool.
      def readable(conn)
        case @reader.poll(conn)
        when :complete
          @selection.forget(conn)
          @pool << conn
        when :incomplete then @deadlines.renew(conn)
        when :closed then @selection.forget(conn)
        when :refused then @selection.retire(conn, :refused)
        end
      end

      def between_turns(stopping)
        @mailbox.take do |conn, outcome|
          next @selection.watch_output(conn, outcome) if conn.outbox.pending?
          next @selection.retire(conn, :done) if outcome == :close # its close lingers (PoolWork#retire)
          next @selection.drop(conn, :idle_draining) if stopping && @deadlines.closable_when_draining?(conn)

          @selection.watch(conn)
          readable(conn) if conn.buffered? # a pipelined request already read
        end
        stopping ? @mailbox.recall_all_and_close { |conn| take_back(conn, stopping) } : recall_parked
      end

      def accept?
        return siblings_had_their_chance? unless @alone || @pool.spare? || @pool.queued.zero?

        @busy_since = nil
        true
      end

      def idle? = @mailbox.empty? && @pool.idle? && @mailbox.parked.zero?

      # Pause accepting (SelectorLoop backs off): the connections we have
      # keep being served, and their closing frees descriptors.
      def out_of_descriptors(_selection, _error) = true

      # The loop ends: what is still parked (a stop took them all already).
      def close = @mailbox.recall_all_and_close { |conn| @selection.drop(conn, :stopped) }

      # At the cap with no idle connection in the selection: the parked ones
      # are idle too, so all come back now and the selection closes the
      # oldest. Left parked, they came back only at their recall
      # (Park::RECALL_AFTER), and until then a new client waited in the
      # backlog. True when any came back.
      def make_room
        back = false
        @mailbox.recall(Float::INFINITY, 0) do |conn|
          back = true
          take_back(conn, false)
        end
        back
      end

      private

      # Parked connections idle for Park::RECALL_AFTER, or due to expire
      # within a TICK (the longest select), come back under the selection's
      # rules for idle ones (deadline, eviction, drain), with the deadline
      # they were parked with. Looked for as often as the selection looks
      # for missed deadlines, not after every select.
      def recall_parked
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if now < @next_recall

        @next_recall = now + Selection::EXPIRY_INTERVAL
        @mailbox.recall(now - Park::RECALL_AFTER, now + TICK) { |conn| take_back(conn, false) }
      end

      def take_back(conn, stopping)
        return @selection.drop(conn, :idle_draining) if stopping && @deadlines.closable_when_draining?(conn)

        @selection.adopt(conn)
      end

      # Busy: false for SIBLING_FIRST from the first refusal, true for as
      # long after it, then false again (a new period).
      def siblings_had_their_chance?
        now = Timeouts.now
        @busy_since = now if @busy_since.nil? || now - @busy_since >= 2 * SIBLING_FIRST
        now - @busy_since >= SIBLING_FIRST
      end
    end
  end
end
