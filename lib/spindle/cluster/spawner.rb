# frozen_string_literal: true

require "socket"
require_relative "../boot/app_loader"
require_relative "message"
require_relative "children"
require_relative "worker"
require_relative "../engine/sibling_share"

module Spindle
  module Cluster
    # Starts workers: forked by the master from the preloaded app (generation 0),
    # or, once a mold serves, forked by the mold from its warmed heap. Either way
    # the new worker gets a SEQPACKET channel to the master and is recorded in
    # the children registry.
    class Spawner
      # siblings: the workers' SiblingShare, mapped before any fork.
      def initialize(config:, log:, children:, listeners:, closes_in_child:, siblings:)
        @config = config
        @siblings = siblings
        @log = log
        @children = children
        @listeners = listeners
        @closes_in_child = closes_in_child.dup # master-only IOs a worker must not keep
        @app = nil
        @rackup = nil
      end

      # The app workers forked from the master run; nil: each loads rackup.
      def app_source(app, rackup)
        @app = app
        @rackup = rackup
      end

      # A master-only IO opened after the Spawner (the control listener of a
      # new master, opened once it takes over).
      def close_in_child(io)
        @closes_in_child << io
      end

      # from: the mold to fork from (a refork's mold on trial); by default
      # the current mold, or the master when there is none.
      def spawn(index, from: nil)
        mold = from || @children.mold
        mold ? from_mold(mold, index) : from_master(index)
      end

      private

      def from_master(index)
        ours, theirs = UNIXSocket.pair(:SEQPACKET)
        @config.run_hooks(:before_fork)
        pid = fork do
          ours.close
          (@closes_in_child + @children.all_channels).each(&:close)
          Worker.new(index: index, generation: 0, channel: theirs, app: @app || AppLoader.load(@rackup),
                     config: @config, log: @log, listeners: @listeners, siblings: @siblings).run
        end
        theirs.close
        @children.add(Child.new(index: index, generation: 0, channel: ours, pid: pid))
      end

      # The mold forks; the worker's pid arrives with its Booted message.
      def from_mold(mold, index)
        ours, theirs = UNIXSocket.pair(:SEQPACKET)
        order = Message::SpawnWorker.new(index: index, generation: mold.generation, channel: theirs)
        Message.send_to(mold.channel, order)
        theirs.close
        @children.add(Child.new(index: index, generation: mold.generation, channel: ours))
      end
    end
  end
end
