# frozen_string_literal: true

require_relative "fiber_loop"

module Spindle
  module Engine
    # Several threads, each running its own FiberLoop on the shared listeners:
    # for apps that mix CPU work with I/O, so one request's computation holds
    # only its own thread's loop. The thread count is the --threads maximum.
    #
    # The loops share one GVL. A loop busy with ready connections never
    # blocks (its epoll finds events at once, and it only blocks in epoll
    # when nothing is ready), so it kept the GVL until Ruby's 100 ms time
    # slice ran out, and the other loops' clients waited that long: a p99
    # of 100-350 ms against a median under 3 ms. Each loop therefore passes
    # the GVL on after a slice of serving (TakingTurns), so that a loop with
    # a ready client waits about TURN_WAIT for the others' slices in all.
    # (A fixed 2 ms slice made that 8 ms with 5 loops: p99 9-26x the median
    # on hello at c=64; see PERFORMANCE.md.)
    class Hybrid
      # About the longest a loop waits while the others take their slices.
      TURN_WAIT = 0.002

      # How long each of `loops` loops (two or more) serves before it lets
      # the others run.
      def self.slice(loops) = TURN_WAIT / (loops - 1)

      # The Handler, as one loop sees it: after a request, if the loop has
      # served for its slice since it last let go of the GVL, it passes it
      # on. One per loop (per thread), so its clock needs no lock.
      class TakingTurns
        def initialize(handler, slice)
          @handler = handler
          @slice = slice
          @turn_began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        end

        # The clock is read here, not through helpers: this runs per request.
        def serve(conn)
          outcome = @handler.serve(conn)
          if Process.clock_gettime(Process::CLOCK_MONOTONIC) - @turn_began >= @slice
            Thread.pass
            @turn_began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          end
          outcome
        end

        def open_connection(...) = @handler.open_connection(...)
        def refuse(...) = @handler.refuse(...)
        def refuse_proxy_header(...) = @handler.refuse_proxy_header(...)
        def writer = @handler.writer

      end

      def self.multithread? = true
      def self.threads? = true # --threads MAX is the number of loops
      # max_connections caps each loop.
      def self.connection_capacity(config) = config.max_connections * config.max_threads

      def initialize(listeners:, handler:, config:, log:)
        @loops = Array.new(config.max_threads) do
          turns = config.max_threads > 1 ? TakingTurns.new(handler, Hybrid.slice(config.max_threads)) : handler
          FiberLoop.new(listeners: listeners, handler: turns, config: config, log: log)
        end
      end

      def run
        threads = @loops.map { |fiber_loop| Thread.new { fiber_loop.run } }
        threads.each(&:join)
      end

      def stop = @loops.each(&:stop)
      def backlog = 0 # a request runs in its connection's fiber at once
    end
  end
end
