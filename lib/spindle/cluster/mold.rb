# frozen_string_literal: true

require_relative "message"

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
      FREE_RESERVE = 0.25
      def initialize(generation:, channel:, app:, config:, log:, listeners:)
        @generation = generation
        @channel = channel
        @app = app
        @config = config
        @log = log
        @listeners = listeners
      end

      def run
        Process.setproctitle("spindle mold (generation #{@generation})")
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
        if Process.respond_to?(:warmup)
          Process.warmup
        else
          3.times { GC.start(full_mark: true, immediate_sweep: true) }
          GC.compact if GC.respond_to?(:compact)
        end
        reserve_free_slots
      end

      # A compacted heap has no free slots, so each worker's first GC would find
      # under 20 % free (RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO) and grow the heap
      # by 80 % in pages of its own. Allocating and dropping a quarter of the
      # live slots here leaves that headroom in pages every worker shares,
      # together at the end of the heap.
      def reserve_free_slots
        wanted = (GC.stat(:heap_live_slots) * FREE_RESERVE).to_i - GC.stat(:heap_free_slots)
        return unless wanted.positive?

        Array.new(wanted) { Object.new }
        GC.start(full_mark: true, immediate_sweep: true)
      end

      def obey(message)
        case message
        when nil then exit!(0) # the master is gone
        when Message::SpawnWorker then spawn(message)
        end
      end

      def spawn(order)
        middle = fork do
          fork { Worker.new(index: order.index, generation: @generation, channel: order.channel, app: @app,
                            config: @config, log: @log, listeners: @listeners).run }
          exit!(0)
        end
        Process.wait(middle)
      ensure
        order.channel&.close
      end
    end
  end
end
