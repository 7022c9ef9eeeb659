# frozen_string_literal: true

require_relative "selector_loop"
require_relative "reactor"
require_relative "mailbox"
require_relative "thread_pool"
require_relative "wait_order"
require_relative "pool_work"
require_relative "park"
require_relative "turns"
require_relative "request_reader"
require_relative "deadlines"
require_relative "connections"
require_relative "output_budget"
require_relative "request_deadlines"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # A reactor thread buffers whole requests; a bounded thread pool runs the
    # app. A new connection's request goes: SelectorLoop + Reactor (accept,
    # read until complete) -> the ThreadPool's queue -> a pool thread
    # (PoolWork: the Handler). After the response, a keep-alive connection
    # waits in the Park, where a free pool thread takes its next request
    # itself, with no reactor in between; one the Park cannot hold (TLS,
    # part of a request in hand, the rest of a slow reader's response, the
    # server stopping, idle for Park::RECALL_AFTER) goes to the Mailbox ->
    # the Reactor, which reads or writes the rest. This class only builds
    # them and runs the loop; the hand-offs go one way round (Mailbox).
    #
    # Before Ruby 3.3 each pool thread takes Turns with the others and the
    # reactor, its slices in its own CPU time: on Ruby 3.1 a thread serving a
    # keep-alive client again and again kept the GVL from the reactor and
    # from the requests it had queued, and the tail grew far past the median
    # (PERFORMANCE.md, "The figures behind lib/'s comments"). From 3.3,
    # Ruby hands the GVL over itself
    # (Turns.for_pool).
    class Threads
      def self.multithread? = true
      def self.sizing(config) = "threads=#{config.threads.join(':')}" # the pool
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase (see Blocking).
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @phase = phase
        @config = config
        budget = OutputBudget.for(config, log) # the process's: passed on from here
        policy = ConnectionPolicy.new(config)
        deadlines = policy.deadlines
        # Every open connection, wherever it is (selection, pool, Park,
        # Mailbox): the reactor thread and the pool threads close them there.
        @connections = Connections.new
        reader = RequestReader.new(handler, config, deadlines, @connections, budget: budget)
        selection = Selection.new(listeners, handler.writer, deadlines, @connections)
        @park = Park.new
        mailbox = Mailbox.new(selection, @park)
        work = PoolWork.new(handler: handler, reader: reader, deadlines: deadlines, budget: budget, mailbox: mailbox,
                            park: @park, connections: @connections, log: log)
        @pool = pool(config, work, mailbox)
        reactor = Reactor.new(selection, reader, deadlines, @pool, mailbox, alone: config.workers <= 1)
        @loop = SelectorLoop.new(selection, reactor, connections: @connections, handler: handler, config: config,
                                                     log: log, tick: Reactor::TICK, policy: policy,
                                                     accept_burst: policy.accept_burst(gated: true), budget: budget,
                                                     siblings: siblings, phase: phase)
        phase.on_change { @loop.wake if phase.draining? }
        # --request-timeout: requests past theirs are flagged, never raised into (RequestDeadlines).
        @requests = RequestDeadlines.new(log, cancel: false) if config.request_timeout
        @tracker = handler.tracker
      end

      def run
        @requests&.watch(@tracker)
        @loop.run
      ensure
        @pool.shutdown(@config.shutdown_timeout)
        @park.release
        @requests&.stop
      end

      def stop = @phase.drain! # as Blocking#stop

      # Complete requests waiting for a pool thread.
      def backlog = @pool.queued

      # Connections open now (Connections#count), from any thread.
      def open_connections = @connections.count

      private

      def pool(config, work, mailbox)
        slice = Turns.slice(config.max_threads) # the other pool threads and the reactor
        ThreadPool.new(min: config.min_threads, max: config.max_threads, on_free: mailbox.method(:thread_freed),
                       wrap: CpuAffinity.method(:app_thread), name: "spindle pool", wait_on: @park, work: work,
                       order: (WaitOrder.new(config.max_queue_time) if config.max_queue_time),
                       context: -> { Turns.for_pool(slice) })
      end
    end
  end
end
