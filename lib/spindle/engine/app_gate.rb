# frozen_string_literal: true

require "async/notification"

module Spindle
  module Engine
    # --app-concurrency N on the fiber engines: at most N requests of a loop
    # run the app at once; the others wait here, before the app, in their
    # own fibers. Without it every connection's request goes straight in,
    # and where the app has a bounded resource (ActiveRecord's pool) the
    # excess waits inside the app: queue time cannot see that wait, and
    # --max-queue-time cannot shed it. Waiting here, it is counted and shed
    # like the threads engine's pool queue, in the same order (WaitOrder).
    #
    # A fiber that leaves hands its place straight to the waiter it picks,
    # woken at the loop's next turn (Async::Notification), so a newcomer
    # cannot take a place between. Only the loop's own fibers use it: no
    # lock.
    class AppGate
      Waiter = Struct.new(:conn, :wakeup, :admitted) do
        def started_at = conn.started_at # WaitOrder's figure
      end

      # order: a WaitOrder (with --max-queue-time), or nil: first in, first out.
      def initialize(limit, order = nil)
        @limit = limit
        @order = order
        @inside = 0
        @waiting = []
      end

      # Runs the block once conn's request may go in; conn: its
      # Connection, whose started_at the order reads.
      def pass(conn)
        enter(conn)
        begin
          yield
        ensure
          leave
        end
      end

      # Requests in the app now, and waiting for a place (stats, tests).
      attr_reader :inside

      def waiting = @waiting.size

      private

      def enter(conn)
        return @inside += 1 if @inside < @limit && @waiting.empty?

        waiter = Waiter.new(conn, Async::Notification.new, false)
        @waiting << waiter
        wait_for_place(waiter)
      end

      # A stop (a drain's, a deadline's) while waiting: a place already
      # handed over is handed on, else the waiter just leaves the list.
      def wait_for_place(waiter)
        waiter.wakeup.wait until waiter.admitted
      rescue Exception # rubocop:disable Lint/RescueException -- Async::Stop too, then raised on
        waiter.admitted ? leave : @waiting.delete(waiter)
        raise
      end

      def leave
        return @inside -= 1 if @waiting.empty?

        waiter = @order ? @order.take(@waiting) : @waiting.shift
        waiter.admitted = true
        waiter.wakeup.signal
      end
    end
  end
end
