# frozen_string_literal: true

module Spindle
  module Cluster
    # Replaces a set of workers one at a time: start a replacement, wait until it
    # serves, then retire one old worker. Capacity therefore never drops below
    # what it was. A phased restart (USR1), a refork and a memory recycle are all
    # rollouts; they differ in which workers they replace.
    class Rollout
      attr_reader :reason

      def initialize(old, reason)
        @old = old
        @reason = reason
        @pending = nil
      end

      # spawn: ->(index) { new Child }; retire: ->(child) { ... }. True when done.
      def advance(spawn:, retire:)
        @old.reject! { |child| child.state != :serving && child.state != :booting }
        if @pending&.serving?
          retire.call(@old.shift) unless @old.empty?
          @pending = nil
        end
        @pending = spawn.call(@old.first.index) if @pending.nil? && !@old.empty?
        @pending = nil if @pending && !@pending.worker? # died while booting: try again next turn
        @old.empty? && @pending.nil?
      end

      def replacing?(child) = @old.include?(child)
    end
  end
end
