# frozen_string_literal: true

require_relative "fiber_loop"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # One event loop per process, a fiber per connection. See FiberLoop.
    class Fibers
      def self.multithread? = false
      def self.sizing(_config) = nil
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase (see Blocking).
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @phase = phase
        @loop = FiberLoop.new(listeners: listeners, handler: handler, config: config, log: log, siblings: siblings,
                              phase: phase, budget: OutputBudget.for(config, log))
        phase.on_change { @loop.wake if phase.draining? }
      end

      def run = CpuAffinity.app_thread { @loop.run } # --cpu-affinity=app: this thread runs the app
      def stop = @phase.drain! # as Blocking#stop
      def backlog = @loop.backlog # from any thread: requests waiting at its AppGate
      def open_connections = @loop.open_connections # from any thread
    end
  end
end
