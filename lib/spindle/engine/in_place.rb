# frozen_string_literal: true

require_relative "connection_policy"

module Spindle
  module Engine
    # The blocking engine's strategy for its SelectorLoop (see there for
    # what a strategy answers): a connection whose request has fully arrived
    # is served at once, in place, on the loop's thread. It and the loop
    # are the only ones that change the Selection; the engine (Blocking)
    # only builds them.
    #
    # While slow readers' outboxes hold more than the output budget,
    # complete requests are set aside unserved (and the loop accepts
    # nothing: SelectorLoop#accept?); the loop keeps writing to the slow
    # readers until the budget has room again.
    #
    # A client that pipelines gets at most ConnectionPolicy::TURNS requests
    # served in a row; then it is set aside too, and served again after the
    # others the selector found ready. Reading on while its socket had bytes
    # let one such client keep the process for as long as it kept sending.
    class InPlace
      # phase: the process's Phase, read after each request (an idle
      # connection closes at once while it drains).
      def initialize(selection, reader, deadlines, handler:, budget:, log:, phase:)
        @selection = selection
        @reader = reader
        @deadlines = deadlines
        @handler = handler
        @budget = budget
        @log = log
        @phase = phase
        @set_aside = [] # connections with a complete request, waiting for the budget or their turn
      end

      # Serves the requests conn has already sent in full. A request still
      # arriving is left to the selector, never waited on. complete: one is
      # already parsed (a connection set aside).
      def readable(conn, complete: false)
        turns = 0
        while complete || (state = @reader.poll(conn)) == :complete
          complete = false
          return set_aside(conn) if @budget.over?
          return next_turn(conn) if (turns += 1) > ConnectionPolicy::TURNS

          outcome = @handler.serve(conn)
          return @selection.release(conn) if outcome == :hijacked
          return finish_output(conn, outcome) if conn.outbox.pending?
          return @selection.retire(conn, :done) if outcome == :close
          break unless conn.buffered? # nothing more yet: the selector will say when
        end
        return @selection.forget(conn) if state == :closed
        return @selection.retire(conn, :refused) if state == :refused

        @deadlines.renew(conn)
        # Phase#draining?, less a call: this runs after every request.
        @selection.drop(conn, :idle_draining) if !@phase.accepting? && @deadlines.closable_when_draining?(conn)
      rescue StandardError => e
        @log.exception(e, "connection failed")
        @selection.drop(conn, :failed)
      end

      def between_turns(_stopping)
        serve_set_aside unless @set_aside.empty? || @budget.over?
      end

      def accept? = true
      def idle? = @set_aside.empty?

      # A descriptor is freed at once: this engine holds idle connections only
      # as spare, and a single thread has no other way to make progress.
      def out_of_descriptors(selection, error)
        @log.error("cannot accept (#{error.message}); closing the longest-idle connection")
        selection.drop_oldest
        false
      end

      def close = @set_aside.each { |conn| @selection.drop(conn, :stopped) }

      # Those set aside hold complete requests: none of them is idle.
      def make_room = false

      private

      # The output budget is spent: the app is not called until it has room.
      def set_aside(conn)
        @selection.forget(conn)
        @set_aside << conn
      end

      # conn had its turns: set aside until the others the selector finds
      # ready had theirs. The wakeup keeps that select from waiting a TICK
      # when none is.
      def next_turn(conn)
        set_aside(conn)
        @selection.wakeup
      end

      # Those set aside before this turn: one set aside again (its turns
      # used up) waits for the next.
      def serve_set_aside
        @set_aside.size.times do
          break if @budget.over?

          conn = @set_aside.shift
          @selection.watch(conn)
          readable(conn, complete: true)
        end
      end

      # The client reads slowly: the loop writes the rest of the response,
      # then acts on its outcome.
      def finish_output(conn, outcome)
        @selection.forget(conn)
        @selection.watch_output(conn, outcome)
      end
    end
  end
end
