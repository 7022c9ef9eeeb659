# frozen_string_literal: true

require_relative "fiber_loop"

module Spindle
  module Engine
    # Several threads, each running its own FiberLoop on the shared listeners:
    # for apps that mix CPU work with I/O, so one request's computation holds
    # only its own thread's loop. The thread count is the --threads maximum.
    class Hybrid
      def self.multithread? = true
      def self.threads? = true # --threads MAX is the number of loops
      # max_connections caps each loop.
      def self.connection_capacity(config) = config.max_connections * config.max_threads

      def initialize(listeners:, handler:, config:, log:)
        @loops = Array.new(config.max_threads) do
          FiberLoop.new(listeners: listeners, handler: handler, config: config, log: log)
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
