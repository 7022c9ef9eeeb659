# frozen_string_literal: true

require_relative "selection"
require_relative "request_reader"
require_relative "output_budget"
require_relative "outbox"
require_relative "deadlines"

module Spindle
  module Engine
    # The threads engine's I/O thread. It accepts connections and reads each
    # request until it is complete (head and body), so a slow client costs a
    # registered socket, never a pool thread. Complete requests go to the pool;
    # keep-alive connections come back here between requests, and so does a
    # response whose end a slow reader has not taken yet: the reactor writes it.
    #
    # Everything touching the selector runs on the reactor's own thread; other
    # threads hand connections back through #resume, which queues and wakes it.
    # While the pool has no spare thread, or the output budget is spent, the
    # listeners are not watched, so new connections wait in the kernel's
    # backlog (where other processes can take them) instead of in this
    # process. At the connection cap, a new client takes the place of the
    # connections idle the longest (Selection#room).
    class Reactor
      TICK = 0.5
      ACCEPT_BURST = 32
      BACK_OFF = 0.5

      def initialize(listeners:, handler:, config:, pool:, log:)
        @handler = handler
        @config = config
        @pool = pool
        @log = log
        @deadlines = Deadlines.new(config)
        @selection = Selection.new(listeners, handler.writer, @deadlines)
        @reader = RequestReader.new(handler, config, @deadlines)
        @budget = OutputBudget.for(config, log)
        @resumed = Thread::Queue.new
        @stopping = false
        @backing_off = nil
      end

      def run
        @selection.watch_listeners
        turn until @stopping && @selection.empty? && @resumed.empty? && @pool.idle?
      ensure
        @selection.close
      end

      # From any thread: a connection whose response the pool has written, with
      # its outcome (:keep_alive, or :close while a slow reader still owes a
      # part of it).
      def resume(conn, outcome)
        @resumed << [conn, outcome]
        @selection.wakeup
      end

      # From any thread: the pool freed a thread.
      def wakeup
        @selection.wakeup unless @selection.accepting? || @stopping
      end

      def stop
        @stopping = true
        @selection.wakeup
      end

      private

      def turn
        @selection.select(TICK) { |io_owner| io_owner.is_a?(Listener) ? accept(io_owner) : readable(io_owner) }
        take_resumed
        @selection.expire(@stopping)
        @stopping ? @selection.unwatch_listeners : balance_accepting
      end

      def accept(listener)
        ACCEPT_BURST.times do
          return @selection.unwatch_listeners unless can_accept?
          return unless (victims = @selection.room(@config.max_connections))

          socket = listener.accept_nonblock or return
          @selection.evict(victims)
          @selection.watch(@handler.open_connection(socket, listener, Outbox.new(socket, @config)))
        end
      rescue Listener::Exhausted => e
        back_off(e)
      end

      # Writes what a slow reader's outbox holds; once it is out, the
      # connection reads its next request.
      def readable(conn)
        return progress(conn) unless conn.outbox.pending?

        progress(conn) if @selection.flush(conn) && conn.buffered?
      end

      # Reads what arrived; a complete request leaves the selector for the pool.
      def progress(conn)
        case @reader.poll(conn)
        when :complete
          @selection.forget(conn)
          @pool << conn
        when :incomplete then @deadlines.renew(conn)
        when :closed then @selection.forget(conn)
        end
      end

      def take_resumed
        until @resumed.empty?
          conn, outcome = @resumed.pop
          next @selection.watch_output(conn, outcome) if conn.outbox.pending?
          next conn.close if @stopping && @deadlines.closable_when_draining?(conn)

          @selection.watch(conn)
          progress(conn) if conn.buffered? # a pipelined request already read
        end
      end

      # Out of file descriptors: stop accepting for a moment and keep serving the
      # connections we have; their closing frees descriptors.
      def back_off(error)
        @log.error("cannot accept (#{error.message}); pausing accepts for #{BACK_OFF}s") unless @backing_off
        @selection.unwatch_listeners
        @backing_off = Timeouts.now + BACK_OFF
      end

      def can_accept?
        @pool.spare? && !@budget.over? && !@selection.full?(@config.max_connections) &&
          !(@backing_off && Timeouts.now < @backing_off)
      end

      def balance_accepting
        @backing_off = nil if @backing_off && Timeouts.now >= @backing_off
        if @selection.accepting? then @selection.unwatch_listeners unless can_accept?
        elsif can_accept? then @selection.watch_listeners
        end
      end
    end
  end
end
