# frozen_string_literal: true

require_relative "selection"
require_relative "request_reader"
require_relative "output_budget"
require_relative "outbox"
require_relative "deadlines"

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
      def self.threads? = false
      def self.connection_capacity(config) = config.max_connections

      def initialize(listeners:, handler:, config:, log:)
        @handler = handler
        @config = config
        @log = log
        @deadlines = Deadlines.new(config)
        @selection = Selection.new(listeners, handler.writer, @deadlines)
        @reader = RequestReader.new(handler, config, @deadlines)
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

      # Requests wait for nothing but this thread: none queue.
      def backlog = 0

      private

      def turn
        @selection.select(TICK) { |io_owner| io_owner.is_a?(Listener) ? accept(io_owner) : readable(io_owner) }
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
        @selection.watch(@handler.open_connection(socket, listener, Outbox.new(socket, @config)))
      rescue Listener::Exhausted => e
        @log.error("cannot accept (#{e.message}); closing the longest-idle connection")
        @selection.drop_oldest
      end

      # conn is readable, or writable while it finishes a response (#flush).
      def readable(conn)
        return serve(conn) unless conn.outbox.pending?

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
          return finish_output(conn, outcome) if conn.outbox.pending?
          return @selection.drop(conn) if outcome == :close
          break unless conn.buffered? # nothing more yet: the selector will say when
        end
        return @selection.forget(conn) if state == :closed

        @deadlines.renew(conn)
        @selection.drop(conn) if @stopping && @deadlines.closable_when_draining?(conn)
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

      # The client reads slowly: the selector writes the rest of the response,
      # then acts on its outcome.
      def finish_output(conn, outcome)
        @selection.forget(conn)
        @selection.watch_output(conn, outcome)
      end
    end
  end
end
