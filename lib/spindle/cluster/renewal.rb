# frozen_string_literal: true

require_relative "rollout"
require_relative "../ops/process_stats"

module Spindle
  module Cluster
    # Which workers the master replaces, one Rollout at a time: all of them
    # on USR1 (a phased restart, which systemd hears of as a reload), the
    # older generation once a refork's first worker serves, and a worker
    # whose memory passed --worker-memory-limit (checked every
    # MEMORY_CHECK_EVERY). A rollout waits for a refork under way, and a
    # refork for a rollout; nothing advances once the master drains.
    #
    # Ports, so a test drives it with fake children and a fake clock:
    #   memory  ->(pid) { {uss: bytes, ...} or nil } (ProcessStats.memory)
    class Renewal
      MEMORY_CHECK_EVERY = 5.0

      def initialize(children:, supervisor:, reforker:, phase:, config:, log:, clock:, notes:,
                     memory: ProcessStats.method(:memory))
        @children = children
        @supervisor = supervisor
        @reforker = reforker
        @phase = phase
        @memory_limit = config.worker_memory_limit
        @log = log
        @clock = clock
        @notes = notes
        @memory = memory
        @rollout = nil
        @reloading = false
        @next_memory_check = 0
      end

      # The rollout under way, or nil.
      def reason = @rollout&.reason

      # reload: an operator's reload (USR1), which systemd hears of.
      def start(old, reason, reload: false)
        return @log.info("spindle: #{reason} waits: #{@rollout.reason} in progress") if @rollout
        return @log.info("spindle: #{reason} waits: the refork to generation #{@reforker.target} is under way") if
          @reforker.busy?

        @log.info("spindle: #{reason}: replacing #{old.size} worker(s) one at a time")
        @rollout = Rollout.new(old, reason)
        @reloading = reload
        @notes.reloading("#{reason}: replacing #{old.size} worker(s)") if reload
      end

      # USR1.
      def phased_restart = start(@children.active.dup, "phased restart", reload: true)

      # Every tick of the master's loop, after the reaping.
      def tick
        refork_proved if !@phase.draining? && @reforker.check == :proved
        recycle_fat_workers
        advance
      end

      private

      # Once the new generation's first worker serves, the older workers are
      # replaced one at a time.
      def refork_proved
        generation = @reforker.generation
        @log.info("spindle: refork to generation #{generation}: its first worker serves")
        start(@children.active.select { |c| c.generation < generation }, "refork to generation #{generation}")
      end

      def recycle_fat_workers
        now = @clock.call
        return unless @memory_limit && !@rollout && !@reforker.busy? && now >= @next_memory_check

        @next_memory_check = now + MEMORY_CHECK_EVERY
        fat = @children.active.find { |c| c.serving? && @memory.call(c.pid)&.fetch(:uss).to_i > limit_bytes }
        start([fat], "worker #{fat.index} over #{@memory_limit} MiB") if fat
      end

      def limit_bytes = @memory_limit * 1024 * 1024

      def advance
        return unless @rollout && !@phase.draining?

        outcome = @rollout.advance(spawn: ->(index) { @supervisor.spawn(index) },
                                   retire: ->(child) { @supervisor.dismiss(child) })
        return if outcome == :running

        said = if outcome == :done
                 "#{@rollout.reason} done"
               else
                 "#{@rollout.reason} failed: #{outcome}; the old workers keep serving"
               end
        outcome == :done ? @log.info("spindle: #{said}") : @log.error(said)
        @notes.reloaded(said) if @reloading
        @rollout = nil
      end
    end
  end
end
