# frozen_string_literal: true

require_relative "selector_loop"
require_relative "in_place"
require_relative "request_reader"
require_relative "deadlines"
require_relative "connections"
require_relative "output_budget"
require_relative "request_deadlines"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. Its
    # SelectorLoop watches the listeners and every open connection; a
    # connection whose request has fully arrived is served at once, on that
    # thread (InPlace, the loop's strategy), the app and the response write
    # blocking the process. A slow app holds everything: that is the
    # baseline the other engines are measured against. A slow client does
    # not: its partial request stays parked, bounded by deadlines, and the
    # end of a response it reads slowly waits in the connection's outbox,
    # written by the loop.
    #
    # This class only builds the loop and its strategy, and runs the loop:
    # the strategy serves, the loop accepts, writes and expires, and those
    # two alone change the Selection.
    class Blocking
      TICK = 1.0

      def self.multithread? = false
      def self.sizing(_config) = nil
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase, which the Server moves; the engine drains once it
      # is draining.
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @phase = phase
        policy = ConnectionPolicy.new(config)
        deadlines = policy.deadlines
        @connections = Connections.new # every open connection; the selection and the reader close them
        selection = Selection.new(listeners, handler.writer, deadlines, @connections)
        budget = OutputBudget.for(config, log) # the process's: passed on from here
        reader = RequestReader.new(handler, config, deadlines, @connections, budget: budget)
        strategy = InPlace.new(selection, reader, deadlines, handler: handler, budget: budget, log: log, phase: phase)
        @loop = SelectorLoop.new(selection, strategy, connections: @connections, handler: handler, config: config,
                                                      log: log, tick: TICK, policy: policy,
                                                      accept_burst: policy.accept_burst, budget: budget,
                                                      siblings: siblings, phase: phase)
        phase.on_change { @loop.wake if phase.draining? }
        # --request-timeout: requests past theirs are flagged, never raised into (RequestDeadlines).
        @requests = RequestDeadlines.new(log, cancel: false) if config.request_timeout
        @tracker = handler.tracker
      end

      def run
        @requests&.watch(@tracker)
        CpuAffinity.app_thread { @loop.run } # --cpu-affinity=app: this thread runs the app
      ensure
        @requests&.stop
      end

      # The Server drains its Phase instead; this is for those that hold only
      # the engine (a test, an embedder).
      def stop = @phase.drain!

      # Requests wait for nothing but this thread: none queue.
      def backlog = 0

      # Connections open now (Connections#count), from any thread.
      def open_connections = @connections.count
    end
  end
end
