# frozen_string_literal: true

module Spindle
  module Engine
    # What the threads engine's pool threads send back to the reactor's
    # thread, which alone touches the selector: connections whose response
    # is written, each with the Handler's outcome, and word that a thread is
    # free (so accepting may resume). Pool threads post; the Reactor takes,
    # between two selects. Hand-offs go one way round: reactor -> ThreadPool
    # (its queue) -> a pool thread -> this mailbox -> reactor.
    class Mailbox
      def initialize(selection)
        @selection = selection
        @kept = Thread::Queue.new # :keep_alive: read the next request
        @closing = Thread::Queue.new # :close: a response a slow reader still owes, or a lingering close
      end

      # Connections posted and not taken yet.
      def size = @kept.size + @closing.size

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
    end
  end
end
