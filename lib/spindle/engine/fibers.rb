# frozen_string_literal: true

require_relative "fiber_loop"
require_relative "../cpu_affinity"

module Spindle
  module Engine
    # One event loop per process, a fiber per connection. See FiberLoop.
    class Fibers
      def self.multithread? = false
      def self.sizing(_config) = nil
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none).
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: nil)
        @phase = phase # issue 66: read once this engine follows the phase (its own branch)
        @loop = FiberLoop.new(listeners: listeners, handler: handler, config: config, log: log, siblings: siblings)
      end

      def run = CpuAffinity.app_thread { @loop.run } # --cpu-affinity=app: this thread runs the app
      def stop = @loop.stop
      def backlog = 0 # a request runs in its connection's fiber at once
    end
  end
end
