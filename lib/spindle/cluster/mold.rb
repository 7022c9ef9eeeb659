# frozen_string_literal: true

require_relative "message"
require_relative "../process/handed_sockets"

module Spindle
  module Cluster
    # A warmed worker turned template. It has served requests, so its heap holds
    # what the app builds at run time (caches, compiled code, lazily loaded
    # constants). It compacts that heap, then forks the next generation from it:
    # their memory is shared copy-on-write with the mold's, not rebuilt in each.
    #
    # Each worker is forked twice over: the middle process exits at once, so the
    # worker is reparented to the master (a child subreaper), which alone reaps
    # and supervises workers. The worker's channel to the master arrives with the
    # master's SpawnWorker order, passed over the mold's channel (SCM_RIGHTS).
    class Mold
      # Ruby's default RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO.
      DEFAULT_MIN_FREE_RATIO = 0.20
      def initialize(generation:, channel:, app:, config:, log:, listeners:, siblings:)
        @generation = generation
        @siblings = siblings
        @channel = channel
        @app = app
        @config = config
        @log = log
        @listeners = listeners
      end

      def run
        Process.setproctitle("spindle mold (generation #{@generation})")
        @log.become("mold")
        Signal.trap("TERM") { exit!(0) }
        Signal.trap("QUIT") { exit!(0) }
        @config.run_hooks(:before_refork) # the app closes its connections first
        warm_up
        Message.send_to(@channel, Message::MoldReady.new(pid: Process.pid, generation: @generation))
        loop { obey(Message.receive(@channel)) }
      end

      private

      # Leaves the heap as compact and as settled as it will get, so the pages the
      # workers share stay shared (a later GC in a worker writes to fewer of them).
      def warm_up
        GC.start(full_mark: true, immediate_sweep: true)
        headroom = GC.stat(:heap_free_slots)
        if Process.respond_to?(:warmup)
          Process.warmup
        else
          2.times { GC.start(full_mark: true, immediate_sweep: true) }
          GC.compact if GC.respond_to?(:compact)
        end
        reserve_free_slots(headroom)
      end

      # A compacted heap has no free slots, so each worker would collect
      # garbage far more often than the worker this mold was (a GC each time
      # its few free slots run out), and after a GC that leaves fewer than
      # RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO of the slots free, Ruby grows the
      # heap in pages of the worker's own (80 % more with the default 20 %).
      # Allocating and dropping slots here leaves headroom in pages every worker
      # shares, at the end of the heap: as much as this process had free after
      # a full GC before compacting (so workers collect as often as it did),
      # and at least what the ratio asks for. No more: every reserved page a
      # worker allocates into becomes its private copy.
      def reserve_free_slots(headroom)
        ratio = min_free_ratio
        needed = (GC.stat(:heap_live_slots) * ratio / (1 - ratio)).ceil
        wanted = [needed, headroom].max - GC.stat(:heap_free_slots)
        return unless wanted.positive?

        Array.new(wanted) { Object.new }
        GC.start(full_mark: true, immediate_sweep: true)
      end

      # The ratio this Ruby started with (read only at boot, from the environment).
      def min_free_ratio
        ratio = Float(ENV.fetch("RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO", ""), exception: false)
        ratio && ratio.positive? && ratio < 1 ? ratio : DEFAULT_MIN_FREE_RATIO
      end

      def obey(message)
        case message
        when nil then exit!(0) # the master is gone
        when Message::SpawnWorker then spawn(message)
        when Message::Stop then exit!(0) # ordered while it was a worker becoming the mold
        end
      end

      # The worker closes the mold's channel: a worker holding it would keep
      # it open after the mold exits, so the master would never see the mold
      # go, and orders queued to a dead mold (with the new workers' channels
      # in them) would wait there for ever: a slot stuck in :booting.
      def spawn(order)
        middle = fork do
          fork do
            @channel.close
            inherited = HandedSockets.close_inherited
            @log.info("spindle: closed #{inherited} socket(s) the mold's app had taken over (rack.hijack)") if inherited.positive?
            Worker.new(index: order.index, generation: @generation, channel: order.channel, app: @app,
                       config: @config, log: @log, listeners: @listeners, siblings: @siblings).run
          end
          exit!(0)
        end
        Process.wait(middle)
      ensure
        order.channel&.close
      end
    end
  end
end
