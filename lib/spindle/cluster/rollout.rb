# frozen_string_literal: true

module Spindle
  module Cluster
    # Replaces a set of workers one at a time: start a replacement, wait until it
    # serves, then retire one old worker. Capacity therefore never drops below
    # what it was. A phased restart (USR1), a refork and a memory recycle are all
    # rollouts; they differ in which workers they replace.
    #
    # A replacement that fails to boot ends the rollout: the new code (or the
    # new mold) cannot serve, so the old workers keep serving and the next
    # USR1 or refork starts afresh. Retrying here would loop forever on a
    # broken app.
    class Rollout
      attr_reader :reason

      def initialize(old, reason)
        @old = old
        @reason = reason
        @pending = nil
      end

      # spawn: ->(index) { new Child }; retire: ->(child) { ... }.
      # Returns :running, :done, or a String saying why the rollout failed.
      def advance(spawn:, retire:)
        @old.select! { |child| child.serving? || child.booting? }
        if @pending
          return "worker #{@pending.index} #{@pending.booted_at ? 'died' : 'failed to boot'}" if @pending.lost?
          return :running unless @pending.serving?

          retire.call(@old.shift) unless @old.empty?
          @pending = nil
        end
        return :done if @old.empty?

        @pending = spawn.call(@old.first.index)
        :running
      end
    end
  end
end
