# frozen_string_literal: true

require_relative "fiber_loop"

module Spindle
  module Engine
    # One event loop per process, a fiber per connection. See FiberLoop.
    class Fibers
      def self.multithread? = false

      def initialize(listeners:, handler:, config:, log:)
        @loop = FiberLoop.new(listeners: listeners, handler: handler, config: config, log: log)
      end

      def run = @loop.run
      def stop = @loop.stop
    end
  end
end
