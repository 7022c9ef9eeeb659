# frozen_string_literal: true

module Spindle
  # What HUP does, in every process: the actions registered here, in order.
  # The log registers the reopening of its files; other code that must act on
  # HUP (a TLS listener reloading its certificate) joins with one line:
  #
  #   Spindle::Reopen.register("TLS certificates") { reload_certificates }
  #
  # The list is the process's: a forked worker or mold inherits it, so an
  # action registered before the fork runs in every process that gets HUP.
  # Actions run on the thread that reads signals (never inside a trap), and a
  # failing one is logged and does not stop the others: a certificate that
  # fails to load must not leave the log file unrotated.
  module Reopen
    Action = Struct.new(:name, :block)

    @actions = []

    class << self
      # Returns the action, for #unregister.
      def register(name = "reopen", &block)
        action = Action.new(name, block)
        @actions << action
        action
      end

      def unregister(action)
        @actions.delete(action)
      end

      # Runs every action; returns the names of those that failed.
      def run(log)
        @actions.dup.filter_map do |action|
          action.block.call
          nil
        rescue StandardError => e
          log.exception(e, "HUP: #{action.name} failed")
          action.name
        end
      end
    end
  end
end
