# frozen_string_literal: true

require_relative "backoff"

module Spindle
  module Cluster
    # The master's supervision of its workers: how many it keeps (TTIN/TTOU),
    # a worker in every slot (refilled as soon as one is empty, whatever else
    # goes on), the back-off after failed boots, and --worker-timeout (a boot
    # that hangs, a worker that stops checking in or whose oldest request
    # runs too long).
    #
    # A worker about to be killed is first asked to log what it is doing
    # (URG: every thread's backtrace and its requests in flight), so a stuck
    # worker says why before it goes. It gets DUMP_GRACE for that, or less if
    # it reports the dump done (Message::Dumped); then KILL. Its slot is
    # refilled at once: a condemned worker no longer counts.
    #
    # --request-timeout: a serving worker whose oldest request has run past
    # twice its deadline is replaced gracefully, long before --worker-timeout
    # would kill it. The threads and blocking engines never raise into a
    # request; a fiber engine's request that never waits cannot be
    # cancelled. The worker logs its threads (URG, the same dump), then
    # drains (TERM): its slot is refilled at once, its other requests finish,
    # and the late one has until --worker-timeout (or the drain's end).
    #
    # It reads the Children registry and acts through ports, so a test
    # drives it with fake children, a fake clock and recording ports, without
    # forking:
    #   spawner.spawn(index, from:)  starts a worker in slot index (from: a
    #                                mold; nil: the current mold or the master)
    #   signal.call(child, name)     sends a signal to the child's process
    #   clock.call                   monotonic seconds
    class Supervisor
      DUMP_GRACE = 2.0

      attr_reader :desired, :restarts

      # on_boot_failure: called with each child that failed to boot (a new
      # master gives up its takeover on the first).
      def initialize(children:, spawner:, signal:, config:, log:, clock:, on_boot_failure: nil)
        @children = children
        @spawner = spawner
        @signal = signal
        @log = log
        @clock = clock
        @timeout = config.worker_timeout
        @late_after = 2 * config.request_timeout if config.request_timeout
        @desired = config.workers
        @on_boot_failure = on_boot_failure
        @boot_backoff = Backoff.new
        @next_spawn_at = 0
        @restarts = {} # worker index => processes started in that slot after its first
      end

      # --- the worker count -----------------------------------------------------

      def grow
        @desired += 1
        nil
      end

      # nil, or why no worker was removed: a cluster with no worker would
      # refuse every connection while it looks alive.
      def shrink
        return "remove-worker ignored: 1 worker is the fewest a cluster runs (stop the cluster to run none)" if
          @desired <= 1

        @desired -= 1
        victim = @children.active.max_by(&:index)
        retire(victim) if victim
        nil
      end

      # Starts a worker in every empty slot. held: slots a refork keeps for
      # the first worker of its new generation (Reforker#held_slots); every
      # other empty slot is refilled now, from the current mold or the master,
      # whatever a refork or a rollout is doing.
      def refill(held: [])
        return if @clock.call < @next_spawn_at

        empty_slots(held).each { |index| spawn(index) }
      end

      def spawn(index, from: nil)
        @restarts[index] = @restarts.key?(index) ? @restarts[index] + 1 : 0
        @spawner.spawn(index, from: from)
      end

      # Told to drain (TERM); it no longer counts towards the slots.
      def retire(child)
        child.state = :retiring
        @signal.call(child, :TERM)
      end

      # A worker the master no longer wants, booted or not: one forked by a
      # mold that has not reported its pid yet is told to go by closing its
      # channel (its next message fails and it exits).
      def dismiss(child)
        return retire(child) if child.pid

        @children.remove(child)
      end

      # --- boots ------------------------------------------------------------------

      # A worker that died or was killed before it served. Back-off: a broken
      # app would otherwise be forked in a tight loop. The first worker of a
      # refork's generation is the refork's failure (Reforker), not the app's:
      # it neither delays the refill nor counts.
      def boot_failed(child)
        return if child.trial

        delay = @boot_backoff.failed
        @next_spawn_at = @clock.call + delay
        @log.error("worker #{child.index} failed to boot (#{@boot_backoff.failures} in a row); next try in #{delay}s")
        @on_boot_failure&.call(child)
      end

      # Message::Booted. True when the worker now serves. One dismissed
      # before it booted (a rollout or a failed refork let it go) is told to
      # drain now; one condemned meanwhile (too slow to boot) has its KILL
      # coming.
      def booted(child, pid)
        child.pid = pid
        child.booted_at = Time.now
        child.last_checkin = @clock.call
        @signal.call(child, :TERM) if child.state == :retiring
        return false if %i[retiring killed].include?(child.state)

        child.state = :serving
        @boot_backoff.reset
        @log.info("spindle: worker #{child.index} added (pid #{child.pid}, generation #{child.generation}); " \
                  "#{@children.count(&:serving?)} serving")
        true
      end

      # A worker that died before it booted has no pid to reap by: its closed
      # channel is all that is left of it. Any other child is reaped by pid.
      def channel_closed(child)
        return child.channel_closed = true if child.pid

        boot_failed(child)
        @children.remove(child)
      end

      # --- --worker-timeout -------------------------------------------------------

      def check_timeouts
        now = @clock.call
        @children.to_a.each do |child|
          if child.kill_at then kill_when_due(child, now)
          elsif child.booting? then kill_slow_boot(child, now)
          elsif child.pid && (child.serving? || child.state == :retiring)
            kill_if_stuck(child, now) or replace_if_late(child)
          end
        end
      end

      # why: the error line. The child leaves the count at once (:killed);
      # it is asked for its thread dump and killed after DUMP_GRACE, or as
      # soon as it says the dump is written (#dumped).
      def condemn(child, why)
        @log.error(why)
        child.state = :killed
        return @children.remove(child) unless child.pid

        @signal.call(child, :URG)
        child.kill_at = @clock.call + DUMP_GRACE
      end

      def kill(child, name)
        @signal.call(child, name)
      end

      # Message::Dumped: the child's dump is in the log.
      def dumped(child)
        kill_now(child) if child.kill_at
      end

      private

      # Slots 0 … desired-1 with no worker and not held, as many as are
      # missing. (During a rollout a slot briefly has two workers, the old
      # one and its replacement: the count, not only the indexes, decides.)
      def empty_slots(held)
        active = @children.active
        used = active.map(&:index)
        missing = @desired - active.size - (held - used).size
        return [] unless missing.positive?

        taken = used | held
        (0..).lazy.reject { |index| taken.include?(index) }.first(missing)
      end

      # A boot that hangs would hold a slot, a rollout or a hot restart for ever.
      def kill_slow_boot(child, now)
        return unless now - child.spawned_at > @timeout

        condemn(child, "worker #{child.index} did not boot within #{@timeout}s; killing it")
        boot_failed(child)
      end

      # True when it condemned the child.
      def kill_if_stuck(child, now)
        silent = now - child.last_checkin
        busy = child.checkin&.oldest_request_age.to_f
        return false unless silent > @timeout || busy > @timeout

        condemn(child, "worker #{child.index} (pid #{child.pid}) is stuck (silent #{silent.round(1)}s, " \
                       "oldest request #{busy.round(1)}s); logging its threads, then killing it")
        true
      end

      # --request-timeout: see the class's comment. A worker already
      # retiring is left to --worker-timeout.
      def replace_if_late(child)
        busy = child.checkin&.oldest_request_age.to_f
        return unless @late_after && child.serving? && busy > @late_after

        @log.error("worker #{child.index} (pid #{child.pid}) has a request running past twice its deadline " \
                   "(#{busy.round(1)}s, deadline #{(@late_after / 2).round(2)}s); logging its threads, " \
                   "then replacing it (its other requests finish first)")
        @signal.call(child, :URG)
        retire(child)
      end

      def kill_when_due(child, now)
        kill_now(child) if now >= child.kill_at
      end

      def kill_now(child)
        child.kill_at = nil
        @signal.call(child, :KILL)
      end
    end
  end
end
