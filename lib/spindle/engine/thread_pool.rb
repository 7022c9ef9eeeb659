# frozen_string_literal: true

module Spindle
  module Engine
    # A bounded pool of threads taking work from one queue. It grows up to max
    # threads while work waits, and threads above min exit after idling for
    # idle_timeout. The work (work:, or the block) runs in a pool thread for
    # each item pushed, and gets that thread's own object too (nil without a
    # context), made by context.call when the thread starts: state that
    # needs no lock; and the pool, to ask how many items wait (#queued).
    # When it answers AGAIN, the item is queued again, behind the others:
    # the work never pushes into the pool itself (the threads engine's
    # PoolWork, a pipelining client's next request).
    # wrap, when given, is called with each thread's whole life as its block
    # (CpuAffinity.app_thread); name names the threads (ps -T, top -H).
    #
    # With wait_on, a free thread waits there instead of on a condition
    # variable: for queued work and for whatever else may give it an item
    # at once. wait_on answers (the threads engine's Park does):
    #
    #   wait(timeout)  # an item for the caller (run as if it had been
    #                  # queued), :notified (#<< queued one), or nil
    #   notify(count)  # lets count waits return :notified
    #
    # The pool knows nothing else of it: a Park's connections are its own.
    #
    # Queued items go first in, first out; with order, order.take(queue)
    # removes the next one (WaitOrder: newest first while the queue stands).
    class ThreadPool
      AGAIN = :again
      GATHER = 64 # ready connections taken from wait_on per item taken (#gather_arrived)

      def initialize(min:, max:, idle_timeout: 30, on_free: nil, context: nil, wrap: nil, name: nil, wait_on: nil,
                     order: nil, work: nil, &block)
        @min = min
        @max = max
        @idle_timeout = idle_timeout
        @work = work || block
        @context = context
        @on_free = on_free
        @wrap = wrap
        @name = name
        @wait_on = wait_on
        @order = order
        @queue = []
        @mutex = Thread::Mutex.new
        @ready = Thread::ConditionVariable.new
        @threads = []
        @waiting = 0
        @busy = 0
        @shutdown = false
        @mutex.synchronize { @min.times { spawn } }
      end

      def <<(item)
        @mutex.synchronize { enqueue(item) }
        self
      end

      # True while a pushed item would start at once. Read without the lock: a
      # stale answer only delays accepting by one reactor turn.
      def spare? = @busy + @queue.size < @max

      def idle? = @mutex.synchronize { @busy.zero? && @queue.empty? }

      def queued = @queue.size

      # Items a thread is working on now. Read without the lock, like #spare?.
      def busy = @busy

      # Lets running work finish, then ends the threads; gives up at the deadline.
      def shutdown(timeout)
        @mutex.synchronize do
          @shutdown = true
          @wait_on ? @wait_on.notify(@threads.size) : @ready.broadcast
        end
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        @threads.dup.each do |thread|
          thread.join([deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC), 0].max)
        end
      end

      private

      def spawn
        @threads << Thread.new do
          Thread.current.name = @name if @name
          @wrap ? @wrap.call { work_loop } : work_loop
        end
      end

      def work_loop
        context = @context&.call
        while (item = take)
          again = nil
          begin
            again = @work.call(item, context, self) # a block: one that takes only item ignores the rest
          ensure
            # Queued again before this thread counts as free: a reader of
            # #spare? never sees room the item is about to take.
            @mutex.synchronize do
              enqueue(item) if again == AGAIN
              @busy -= 1
            end
            @on_free&.call
          end
        end
      end

      # Holding the lock.
      def enqueue(item)
        @queue << item
        spawn if @waiting < @queue.size && @threads.size < @max
        wake_one
      end

      # The next item, or nil when this thread should end: at shutdown, or after
      # idling a whole idle_timeout while the pool is above its minimum.
      def take = @mutex.synchronize { next_item } # no `return` in the block: on 3.1 each allocates

      # Holding the lock: #take's answer.
      def next_item
        gather_arrived if @wait_on && (@order || !@queue.empty?)
        while @queue.empty?
          return retire if @shutdown

          started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          @waiting += 1
          arrived = wait_for_work
          @waiting -= 1
          return take_parked(arrived) if arrived

          idled = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started >= @idle_timeout
          return retire if idled && @queue.empty? && @threads.size > @min
        end
        @busy += 1
        @order ? @order.take(@queue) : @queue.shift
      end

      # Holding the lock, before a take: what wait_on has ready (the Park:
      # keep-alive connections whose next request has begun to arrive)
      # joins the queue, up to GATHER at a time. Only a free thread waits on
      # wait_on, and while items are queued none is, so those requests would
      # wait unseen until the reactor recalled their connections
      # (Park::RECALL_AFTER, a second), behind every request from a new
      # connection. With an order, at every take, the queue empty too: a
      # free thread would otherwise take the ready connections one by one
      # in the kernel's order, oldest first, which under overload is the
      # queue the order is there to reorder. One non-blocking epoll_wait per
      # item taken, with an order or while a backlog stands.
      def gather_arrived
        gathered = 0
        while gathered < GATHER && (got = @wait_on.wait(0))
          if got == :notified
            @wait_on.notify # a wake meant for a thread that waits for an item: given back
            break
          end
          @queue << got
          gathered += 1
        end
        share_gathered if gathered.positive?
      end

      # Holding the lock, after a gather: what #enqueue does for each item
      # pushed, for those this thread will not take itself: a thread for
      # each that no waiting one will take, up to max, and a wake for those
      # waiting. Gathered, the items reach no thread: a spare one asleep on
      # wait_on stays asleep (their events were taken), and nothing queued
      # them to make the pool grow, so they would wait for this thread, one
      # after another.
      def share_gathered
        others = @queue.size - 1
        return unless others.positive?

        [others - @waiting, @max - @threads.size].min.times { spawn }
        @wait_on.notify([others, @waiting].min) if @waiting.positive?
      end

      # Holding the lock: signals one waiting thread that an item is queued.
      # On wait_on, only while a thread waits there: a thread that comes to
      # #take later finds the item without it.
      def wake_one
        return @ready.signal unless @wait_on

        @wait_on.notify if @waiting.positive?
      end

      # Holding the lock: waits up to idle_timeout for word of queued work,
      # letting go of the lock meanwhile. On wait_on, the wait may end with
      # an item of its own (a parked connection whose request has begun to
      # arrive): returned.
      def wait_for_work
        unless @wait_on
          @ready.wait(@mutex, @idle_timeout)
          return nil
        end

        @mutex.unlock
        begin
          got = @wait_on.wait(@idle_timeout)
        ensure
          @mutex.lock
        end
        got unless got == :notified
      end

      # Holding the lock. An item that wait_on gave reaches only a thread
      # waiting there, and nothing queues to make the pool grow: so the
      # thread that takes one leaves another waiting there, up to max.
      def take_parked(conn)
        @busy += 1
        spawn if @waiting.zero? && @threads.size < @max
        conn
      end

      def retire
        @threads.delete(Thread.current)
        nil
      end
    end
  end
end
