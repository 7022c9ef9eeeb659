# frozen_string_literal: true

require_relative "selection"
require_relative "request_reader"
require_relative "output_budget"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. A Selection
    # (epoll) watches the listeners and every open connection; a connection
    # whose request has fully arrived is served at once, the app and the
    # response write blocking the process. A slow app holds everything: that is
    # the baseline the other engines are measured against. A slow client does
    # not: its partial request stays parked, bounded by deadlines, and the end
    # of a response it reads slowly waits in the connection's outbox.
    #
    # While those outboxes hold more than the output budget, complete requests
    # are set aside unserved and no connection is accepted; the selector keeps
    # writing to the slow readers until the budget has room again.
    class Blocking
      TICK = 1.0

      def self.multithread? = false

      def initialize(listeners:, handler:, config:, log:)
        @handler = handler
        @config = config
        @log = log
        @selection = Selection.new(listeners, handler, config)
        @reader = RequestReader.new(handler, config)
        @budget = OutputBudget.for(config, log)
        @set_aside = [] # connections with a complete request, waiting for the budget
        @stopping = false
      end

      def run
        @selection.watch_listeners
        turn until @stopping && @selection.empty? && @set_aside.empty?
      ensure
        @set_aside.each(&:close)
        @selection.close
      end

      def stop
        @stopping = true
        @selection.wakeup
      end

      private

      def turn
        @selection.select(TICK) { |ready| ready.is_a?(Listener) ? accept(ready) : ready(ready) }
        serve_set_aside unless @budget.over?
        @selection.expire(@stopping)
        if @stopping || @budget.over? || @selection.full?(@config.max_connections)
          @selection.unwatch_listeners
        else
          @selection.watch_listeners
        end
      end

      # At the cap, the new client takes the place of the longest-idle ones.
      def accept(listener)
        return if @budget.over?
        return unless (victims = @selection.room(@config.max_connections))

        socket = listener.accept_nonblock or return
        @selection.evict(victims)
        @selection.watch(@handler.connection(socket, listener, @config, defer_writes: true))
      rescue Listener::Exhausted => e
        @log.error("cannot accept (#{e.message}); closing the longest-idle connection")
        @selection.drop_oldest
      end

      def ready(conn)
        return serve(conn) unless conn.pending_output?

        serve(conn) if @selection.flush(conn) && conn.buffered?
      end

      # Serves the requests conn has already sent in full. A request still
      # arriving is left to the selector, never waited on. complete: one is
      # already parsed (a connection set aside).
      def serve(conn, complete: false)
        while complete || (state = @reader.poll(conn)) == :complete
          complete = false
          return set_aside(conn) if @budget.over?

          outcome = @handler.serve(conn)
          return @selection.forget(conn) if outcome == :hijacked
          return finish_output(conn) if conn.pending_output?
          return @selection.drop(conn) if outcome == :close
          break unless conn.buffered? # nothing more yet: the selector will say when
        end
        return @selection.forget(conn) if state == :closed

        conn.next_deadline(Timeouts.now, @config)
        @selection.drop(conn) if @stopping && conn.closable_when_draining?
      rescue StandardError => e
        @log.exception(e, "connection failed")
        @selection.drop(conn)
      end

      # The output budget is spent: the app is not called until it has room.
      def set_aside(conn)
        @selection.forget(conn)
        @set_aside << conn
      end

      def serve_set_aside
        until @set_aside.empty? || @budget.over?
          conn = @set_aside.shift
          @selection.watch(conn)
          serve(conn, complete: true)
        end
      end

      # The client reads slowly: the selector writes the rest of the response.
      def finish_output(conn)
        @selection.forget(conn)
        @selection.watch_output(conn)
      end
    end
  end
end
