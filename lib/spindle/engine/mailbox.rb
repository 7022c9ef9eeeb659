# frozen_string_literal: true

module Spindle
  module Engine
    # The threads engine's way back to the reactor's thread, which alone
    # touches the selector: connections pool threads send back (their
    # response written, each with the Handler's outcome), word that a
    # thread is free (so accepting may resume), and the parked connections
    # the reactor takes back (Park#recall, #close). A parked connection is
    # taken by a pool thread woken by its request (the ThreadPool's
    # wait_on) or by the reactor through here, never otherwise: the
    # Reactor holds no Park. Pool threads post; the Reactor takes, between
    # two selects. Hand-offs go one way round: reactor -> ThreadPool (its
    # queue) -> a pool thread (-> the Park) -> this mailbox -> reactor.
    class Mailbox
      # park: where the pool threads leave idle keep-alive connections.
      def initialize(selection, park)
        @selection = selection
        @park = park
        @kept = Thread::Queue.new # :keep_alive: read the next request
        @closing = Thread::Queue.new # :close: a response a slow reader still owes, or a lingering close
      end

      # Connections posted and not taken yet.
      def size = @kept.size + @closing.size

      # Connections parked now (Park#size: read without the lock).
      def parked = @park.size

      # From a pool thread. No pair is allocated: the outcome picks the queue.
      def post(conn, outcome)
        (outcome == :close ? @closing : @kept) << conn
        @selection.wakeup
      end

      # From a pool thread: it is free. Wakes the selector only if it is not
      # watching the listeners already (it stops while no thread is spare).
      def thread_freed
        @selection.wakeup unless @selection.accepting?
      end

      def empty? = @kept.empty? && @closing.empty?

      # Connections#retire's holder, for a pool thread: the reactor writes
      # the rest of conn's output, or watches its lingering close
      # (Reactor#between_turns).
      def owe(conn)
        post(conn, :close)
        false
      end

      def linger(conn) = post(conn, :close)

      # On the reactor's thread: each connection posted so far, with its outcome.
      def take
        yield @closing.pop, :close until @closing.empty?
        yield @kept.pop, :keep_alive until @kept.empty?
      end

      # On the reactor's thread: yields each parked connection idle since
      # before idle_before, or whose deadline comes by due_by (Park#recall).
      def recall(idle_before, due_by, &) = @park.recall(idle_before, due_by, &)

      # On the reactor's thread as the server stops: nothing more is parked,
      # and each connection parked is yielded (Park#close).
      def recall_all_and_close(&) = @park.close(&)
    end
  end
end
