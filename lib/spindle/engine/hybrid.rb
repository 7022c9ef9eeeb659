# frozen_string_literal: true

require_relative "fiber_loop"
require_relative "turns"
require_relative "loop_share"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # Several threads, each running its own FiberLoop on the shared listeners:
    # for apps that mix CPU work with I/O, so one request's computation holds
    # only its own thread's loop. The thread count is --loops: two unless set.
    # Not --threads, which sizes the threads engine's pool: an app's config
    # file sets that the way Puma's config/puma.rb does (threads 1, 5 from
    # RAILS_MAX_THREADS), and read as a loop count it ran hybrid on five
    # loops, each past the first costing CPU on every request (ENGINES.md).
    #
    # The loops share one GVL. A loop busy with ready connections never
    # blocks (its epoll finds events at once, and it only blocks in epoll
    # when nothing is ready), so it kept the GVL until Ruby's 100 ms time
    # slice ran out, and the other loops' clients waited that long. Each
    # loop therefore takes Turns with the others. (A fixed slice per loop
    # made a loop with a ready client wait that slice times the other loops,
    # and the tail grew with the number of loops; the figures of this class:
    # PERFORMANCE.md, "The figures behind lib/'s comments".)
    class Hybrid
      # How long each of `loops` loops (two or more) serves before it lets
      # the others run.
      def self.slice(loops) = Turns.slice(loops - 1)

      # The Handler, as one loop sees it: its Turns after each request. One
      # per loop (per thread). The slice is the loop's own CPU time, as the
      # threads engine's: in wall time a loop that had waited for the GVL,
      # or whose fibers waited for their database, counted that as serving,
      # and on the blog page it passed after every request (Turns#served
      # showed in hybrid's CPU samples). A CPU clock is its thread's, so the
      # Turns is made at the loop's first request, on the loop's thread.
      #
      # A turn goes round the loop's clients once: a client's second request
      # in a turn ends the turn first, unless the turn is younger than
      # SHORTEST_TURN slices. With only the slice, a loop with the GVL went
      # round its clients several times on a light app while the other
      # loops' clients waited for it, and the tail grew past the median many
      # times over. The shortest turn bounds the cost of the passes: ending
      # every turn at the first repeat cost throughput where many loops hold
      # few clients each (PERFORMANCE.md, "The figures behind lib/'s comments").
      class TakingTurns
        SHORTEST_TURN = 0.25

        # shortest: the shortest turn, in seconds.
        def initialize(handler, slice, shortest: slice * SHORTEST_TURN)
          @handler = handler
          @slice = slice
          @shortest = shortest
          @turns = nil
          @served = {}.compare_by_identity # the clients served in this turn: a slice's worth at most
        end

        def serve(conn)
          turns = (@turns ||= Turns.new(@slice))
          @served.clear if @served.key?(conn) && turns.pass_after(@shortest)
          @served[conn] = true
          outcome = @handler.serve(conn)
          @served.clear if turns.served
          outcome
        end

        def open_connection(...) = @handler.open_connection(...)
        def refuse(...) = @handler.refuse(...)
        def refuse_proxy_header(...) = @handler.refuse_proxy_header(...)
        def writer = @handler.writer
      end

      def self.multithread? = true
      def self.sizing(config) = "loops=#{config.loops}"
      # max_connections caps the process: each loop holds its LoopShare#cap.
      # (It used to cap each loop, so 5 loops could hold 20,480 connections
      # and a hard open-file limit of 20,000 logged an error at every start.)
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase (see Blocking).
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @phase = phase
        share = LoopShare.new(config.loops) if config.loops > 1
        budget = OutputBudget.for(config, log) # the process's, one for every loop
        @loops = Array.new(config.loops) do
          turns = share ? TakingTurns.new(handler, Hybrid.slice(config.loops)) : handler
          FiberLoop.new(listeners: listeners, handler: turns, config: config, log: log, share: share,
                        siblings: siblings, phase: phase, budget: budget)
        end
        phase.on_change { @loops.each(&:wake) if phase.draining? }
      end

      def run
        threads = @loops.map do |fiber_loop|
          Thread.new do
            Thread.current.name = "spindle loop"
            CpuAffinity.app_thread { fiber_loop.run } # --cpu-affinity=app
          end
        end
        threads.each(&:join)
      end

      def stop = @phase.drain! # as Blocking#stop
      def backlog = @loops.sum(&:backlog) # from any thread: requests waiting at each loop's AppGate
      def open_connections = @loops.sum(&:open_connections) # from any thread: each loop's own
    end
  end
end
