# frozen_string_literal: true

module Spindle
  module Cluster
    # What the master loop has to act on: signals (from trap handlers) and
    # control commands (from the control thread), in arrival order. Pushing only
    # appends to an Array and writes a byte to a pipe, both safe in a trap
    # handler; the master's select wakes on the pipe.
    class SignalQueue
      SIGNALS = %w[TERM INT QUIT USR1 USR2 TTIN TTOU].freeze

      attr_reader :reader

      def initialize
        @pending = []
        @reader, @writer = IO.pipe
      end

      def trap_signals
        SIGNALS.each { |name| Signal.trap(name) { push(name.to_sym) } }
        self
      end

      # item: a signal name (Symbol) or a control command ([:stats, reply_queue]).
      def push(item)
        @pending << item
        @writer.write_nonblock(".", exception: false)
      end

      def drain
        @reader.read_nonblock(4096, exception: false)
        items = []
        items << @pending.shift until @pending.empty?
        items
      end
    end
  end
end
