# frozen_string_literal: true

module Spindle
  module Engine
    # Which waiting request goes to the app next, under --max-queue-time:
    # the threads engine's pool queue (ThreadPool's order:) and the fiber
    # engines' AppGate take from their waiting lists through it.
    #
    # First in, first out while the queue is short. Once the oldest request
    # has waited half of max-queue-time (a queue that is not draining), the
    # newest goes first: under overload, first in, first out serves every
    # request just inside max-queue-time, so the ones served all wait about
    # that long, and their clients see it. Newest first serves them while
    # still fresh, and the old ones, once past max-queue-time, go next: the
    # shedding step answers them 503 at once, which costs the app nothing.
    # This is "adaptive LIFO" (Maurer, "Fail at Scale", ACM Queue 2015).
    #
    # A request's age counts from its first byte (TimedConnection#started_at:
    # its arrival in the kernel on TCP; elsewhere its read, or on a parked
    # keep-alive connection when a pool thread gathered it, Park#wait). A
    # pipelined request not yet parsed has none, and counts as new. The
    # proxy's X-Request-Start, which the shedding step also reads, is not
    # parsed yet here.
    class WaitOrder
      def initialize(max_queue_time)
        @max = max_queue_time
        @standing = max_queue_time / 2.0
      end

      # Removes from waiting (an Array, oldest first, of items whose
      # started_at gives their first byte's monotonic time, or nil) the one
      # to serve next, and returns it.
      def take(waiting)
        age = age(waiting.first)
        age > @max || age < @standing ? waiting.shift : waiting.pop
      end

      private

      def age(item)
        started = item.started_at
        started ? Process.clock_gettime(Process::CLOCK_MONOTONIC) - started : 0.0
      end
    end
  end
end
