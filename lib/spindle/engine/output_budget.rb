# frozen_string_literal: true

module Spindle
  module Engine
    # The response bytes a process holds for clients that have not read them
    # yet, across all its connections' outboxes, and the bound on them
    # (--max-pending-output). Without it, slow readers (slowhttptest's
    # slow-read attack) make a server keep a copy of every response they
    # asked for (docs/MEMORY.md and docs/SECURITY.md give what that cost).
    #
    # The bound is not enforced by refusing output: a response an app has
    # returned is in memory already, and dropping it would fail a client that
    # did nothing wrong. It is enforced by producing no more while it is
    # exceeded: engines start no app call and accept no connection until the
    # outboxes drain below it (#wait_for_room, #over?). The bytes held can
    # therefore pass the bound by the responses of the app calls already
    # running when it was reached, and no further.
    #
    # Connections #take bytes when they hold output and #give them back as the
    # client takes them (or when the connection closes). Thread-safe: the
    # threads engine holds output in pool threads and writes it from the
    # reactor, and the hybrid engine's loops share one budget.
    class OutputBudget
      MIB = 1024 * 1024
      # A waiter looks again at least this often, so a wakeup missed in a race
      # costs at most this long.
      RECHECK = 1.0
      # The log says the budget is spent at most this often (slow readers keep
      # it near the bound; one line per crossing would flood the log).
      REPORT_EVERY = 60.0

      REGISTRY_LOCK = Thread::Mutex.new
      @budgets = {}.compare_by_identity
      @pid = nil

      # The serving process's budget for config. One per process: a forked
      # worker starts with its own (nothing of its parent's outboxes is its
      # to hold). log, when given, is where it says it is spent.
      def self.for(config, log = nil)
        budget = REGISTRY_LOCK.synchronize do
          unless @pid == Process.pid
            @budgets = {}.compare_by_identity
            @pid = Process.pid
          end
          @budgets[config] ||= new(config.max_pending_output * MIB)
        end
        budget.report_to(log) if log
        budget
      end

      attr_reader :limit

      def initialize(limit)
        @limit = limit
        @held = 0
        @mutex = Thread::Mutex.new
        @room = Thread::ConditionVariable.new
        @log = nil
        @reported = nil
      end

      def report_to(log)
        @log ||= log
      end

      # Bytes held now.
      def held = @held

      # True while more than the bound is held. Read without the lock: a stale
      # answer only delays a decision by one turn of the caller's loop.
      def over? = @held > @limit

      def take(bytes)
        spent = @mutex.synchronize do
          was_over = over?
          @held += bytes
          over? && !was_over
        end
        report if spent
      end

      def give(bytes)
        @mutex.synchronize do
          was_over = over?
          @held -= bytes
          @room.broadcast if was_over && !over?
        end
      end

      # Waits while the bound is exceeded. A pool thread blocks here; a fiber
      # yields (Thread::ConditionVariable defers to the Fiber::Scheduler), and
      # #give wakes it from whichever thread frees the room.
      def wait_for_room
        return unless over?

        @mutex.synchronize { @room.wait(@mutex, RECHECK) while over? }
      end

      private

      # Outside the lock: a log write may yield under a Fiber::Scheduler.
      def report
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return unless @log && (@reported.nil? || now - @reported >= REPORT_EVERY)

        @reported = now
        @log.error("slow readers hold #{@held / MIB} MiB of unsent output (--max-pending-output " \
                   "#{@limit / MIB}): new requests and connections wait until they read")
      end
    end
  end
end
