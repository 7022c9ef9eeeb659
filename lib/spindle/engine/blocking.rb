# frozen_string_literal: true

require_relative "selector_loop"
require_relative "request_reader"
require_relative "deadlines"
require_relative "output_budget"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. Its
    # SelectorLoop watches the listeners and every open connection; a
    # connection whose request has fully arrived is served at once, here, the
    # app and the response write blocking the process. A slow app holds
    # everything: that is the baseline the other engines are measured
    # against. A slow client does not: its partial request stays parked,
    # bounded by deadlines, and the end of a response it reads slowly waits
    # in the connection's outbox, written by the loop.
    #
    # While those outboxes hold more than the output budget, complete requests
    # are set aside unserved and no connection is accepted; the loop keeps
    # writing to the slow readers until the budget has room again.
    #
    # A client that pipelines gets at most ConnectionPolicy::TURNS requests
    # served in a row;
    # then it is set aside too, and served again after the others the
    # selector found ready. Reading on while its socket had bytes let one
    # such client keep the process for as long as it kept sending.
    class Blocking
      TICK = 1.0

      def self.multithread? = false
      def self.sizing(_config) = nil
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase, which the Server moves; the engine drains once it
      # is draining.
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @handler = handler
        @phase = phase
        @log = log
        policy = ConnectionPolicy.new(config)
        @deadlines = policy.deadlines
        @selection = Selection.new(listeners, handler.writer, @deadlines)
        @budget = OutputBudget.for(config, log) # the process's: passed on from here
        @reader = RequestReader.new(handler, config, @deadlines, budget: @budget)
        @set_aside = [] # connections with a complete request, waiting for the budget or their turn
        @loop = SelectorLoop.new(@selection, self, handler: handler, config: config, log: log, tick: TICK,
                                                   policy: policy, accept_burst: policy.accept_burst, budget: @budget,
                                                   siblings: siblings, phase: phase)
        phase.on_change { @loop.wake if phase.draining? }
      end

      def run = CpuAffinity.app_thread { @loop.run } # --cpu-affinity=app: this thread runs the app

      # The Server drains its Phase instead; this is for those that hold only
      # the engine (a test, an embedder).
      def stop = @phase.drain!

      # Requests wait for nothing but this thread: none queue.
      def backlog = 0

      # The SelectorLoop's strategy (see there).

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
          return @selection.forget(conn) if outcome == :hijacked
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
      def away = @set_aside.size

      # A descriptor is freed at once: this engine holds idle connections only
      # as spare, and a single thread has no other way to make progress.
      def out_of_descriptors(selection, error)
        @log.error("cannot accept (#{error.message}); closing the longest-idle connection")
        selection.drop_oldest
        false
      end

      def close = @set_aside.each { |conn| Connections.close(conn, :stopped) }

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
