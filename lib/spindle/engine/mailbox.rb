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
        @closing = Thread::Queue.new # :close, with a response a slow reader still owes
        @away = 0 # connections handed to the pool and not back yet
        @lock = Thread::Mutex.new
      end

      # Connections away from the reactor: queued for, or held by, a pool
      # thread, or posted here and not taken yet. They count towards the cap.
      attr_reader :away

      # On the reactor's thread: conn went to the pool.
      def handed_out = count(1)

      # From a pool thread: a connection it had will not come back (closed,
      # or hijacked by the app).
      def gone = count(-1)

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

      # On the reactor's thread: each connection posted so far, with its outcome.
      def take
        until @closing.empty?
          count(-1)
          yield @closing.pop, :close
        end
        until @kept.empty?
          count(-1)
          yield @kept.pop, :keep_alive
        end
      end

      private

      def count(step) = @lock.synchronize { @away += step }
    end
  end
end
