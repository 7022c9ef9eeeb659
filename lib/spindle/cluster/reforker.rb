# frozen_string_literal: true

require "socket"
require "time"
require_relative "message"

module Spindle
  module Cluster
    # One refork at a time, from the order to its outcome (docs/REFORKING.md):
    #
    #   :becoming  The busiest worker drains and turns into the mold of the
    #              next generation (its before_refork hook, the heap
    #              warm-up). Its slot is held for the new generation's first
    #              worker. Deadline: --worker-timeout, as for any worker: it
    #              checks in while it drains and once more when drained, so
    #              silence that long (a hook or a warm-up that hangs) or a
    #              request running that long ends the refork.
    #   :trying    The mold is ready and the first worker forked from it boots
    #              in the held slot (its after_refork hook); its boot has the
    #              boot's deadline (Supervisor). The mold is on trial
    #              (:mold_trial): until one of its workers serves, every other
    #              slot is refilled from the previous mold, or the master.
    #
    # The refork succeeds when that first worker serves: the generation moves
    # on, the new mold replaces the previous one, and #check answers :proved
    # (the master then replaces the older workers one at a time, a Rollout).
    # It fails when a process dies or misses its deadline: the generation
    # stays, what the refork started is dismissed, the held slot is let go
    # (the Supervisor refills it from the previous generation at once), and
    # the reason is kept for stats (#report) and logged.
    #
    # Unit-testable without forking: fake children, a Supervisor (or a stand-in
    # with spawn, condemn, dismiss), a fake clock.
    class Reforker
      PHASES = { becoming: "becoming_mold", trying: "first_worker_booting" }.freeze

      attr_reader :generation, :failures

      def initialize(children:, supervisor:, config:, log:, clock:)
        @children = children
        @supervisor = supervisor
        @config = config
        @log = log
        @clock = clock
        @generation = 0
        @failures = 0
        @last_failure = nil
        @held_after = nil # the generation whose refork failed: --refork-after waits past it
        reset
      end

      def busy? = !@phase.nil?

      # The generation a refork under way makes (or the next one makes).
      def target = @generation + 1

      # nil, or why no refork started.
      def start
        return "refork ignored: the refork to generation #{target} is under way" if busy?

        candidate = @children.select(&:serving?).max_by(&:requests)
        return "refork ignored: no worker is serving" unless candidate

        @log.info("spindle: refork: worker #{candidate.index} (#{candidate.requests} requests) becomes the mold")
        candidate.state = :mold_pending
        @phase = :becoming
        @candidate = candidate
        Message.send_to(candidate.channel, Message::BecomeMold.new(generation: target))
        nil
      end

      # --refork-after: a worker of this generation has served its count. After a
      # failure it waits for the next generation: the next busiest worker would
      # run the same hook and might fail the same way. A refork by hand is
      # always tried.
      def due?
        counts = @config.refork_after
        return false if !counts || busy? || @held_after == @generation

        threshold = counts[[@generation, counts.size - 1].min]
        @children.any? { |c| c.serving? && c.generation == @generation && c.requests >= threshold }
      end

      # Slots no one else may fill: the mold-to-be's, for the first worker it forks.
      def held_slots
        case @phase
        when :becoming then [@candidate.index]
        when :trying then [@trial.index]
        else []
        end
      end

      # Message::MoldReady. One from a mold-to-be already given up (killed
      # past its deadline) is ignored: its KILL is on its way. stopping: the
      # master's stop began while it became the mold. Nothing is forked from
      # it then, and it is told to go: a worker forked from it was never told
      # to stop, and the stopping master waited for it, and its mold, for ever.
      def mold_ready(child, message, stopping: false)
        return unless @phase == :becoming && child.equal?(@candidate)

        child.pid = message.pid
        child.generation = message.generation
        return stop_mold(child) if stopping

        child.state = :mold_trial
        @phase = :trying
        @mold = child
        @trial = @supervisor.spawn(child.index, from: child)
        @trial.trial = true
      end

      # Called on every reaped child (not while the master stops): the
      # master's exit line has said how it died; this is what it cost.
      def exited(child, how)
        if @phase == :becoming && child.equal?(@candidate)
          failed("worker #{child.index} died while it became the mold (#{how})", log: false)
        elsif @phase == :trying && child.equal?(@mold)
          failed("the new mold died before its first worker served (#{how})", log: false)
        end
      end

      # Every tick: the deadlines and the first worker's outcome.
      # Returns :proved (the new generation serves), :failed, or nil.
      def check
        case @phase
        when :becoming then check_becoming
        when :trying then check_trial
        end
      end

      # For stats: what a refork under way is doing, and why the last one failed.
      def report
        { "state" => PHASES.fetch(@phase, "idle"), "generation" => (target if busy?),
          "last_failure" => @last_failure }
      end

      private

      def reset
        @phase = nil
        @candidate = nil
        @mold = nil
        @trial = nil
      end

      def check_becoming
        why = overdue(@candidate)
        return unless why

        @supervisor.condemn(@candidate, "refork to generation #{target} failed: worker #{@candidate.index} " \
                                        "(pid #{@candidate.pid}) #{why}; logging its threads, then killing it")
        failed("worker #{@candidate.index} #{why}", log: false)
      end

      # The rule every worker is held to (Supervisor#kill_if_stuck), said for
      # a mold-to-be: its last check-in came when it drained, so silence after
      # one with nothing in flight is its before_refork hook or its warm-up.
      def overdue(child)
        limit = @config.worker_timeout
        busy = child.checkin&.oldest_request_age.to_f
        return "did not finish a request within #{limit}s (--worker-timeout) while it drained" if busy > limit

        silent = @clock.call - child.last_checkin
        return unless silent > limit
        return "stopped checking in for #{silent.round(1)}s while it drained" if child.checkin&.in_flight.to_i.positive?

        "did not become the mold within #{limit}s (--worker-timeout) of draining: " \
          "its before_refork hook or heap warm-up did not finish"
      end

      def check_trial
        return prove if @trial.booted_at
        return unless @trial.lost?

        limit = @config.worker_timeout
        how = @clock.call - @trial.spawned_at > limit ? "did not boot within #{limit}s" : "exited before it served"
        failed("worker #{@trial.index}, the first forked from the new mold, #{how} (see its after_refork hook)")
      end

      def prove
        previous = @children.mold
        retire_mold(previous) if previous
        @mold.state = :mold
        @trial.trial = false
        @generation = @mold.generation
        reset
        :proved
      end

      # log: false when the line that says so is already out (the exit line,
      # the kill's).
      def failed(reason, log: true)
        failed_generation = target
        @failures += 1
        @held_after = @generation
        @last_failure = { "generation" => failed_generation, "reason" => reason, "at" => Time.now.utc.iso8601 }
        @supervisor.dismiss(@trial) if @trial && %i[booting serving].include?(@trial.state)
        retire_mold(@mold) if @mold && !@mold.exited?
        reset
        @log.error("refork to generation #{failed_generation} failed: #{reason}; #{refilled_from}") if log
        :failed
      end

      def refilled_from
        mold = @children.mold
        "the slot is refilled from #{mold ? "the mold of generation #{mold.generation}" : 'the master'}"
      end

      def stop_mold(mold)
        retire_mold(mold)
        reset
      end

      # End of stream on its channel, not a signal: the mold first carries
      # out the orders already queued to it (workers the master counts on),
      # then exits.
      def retire_mold(mold)
        mold.state = :mold_retiring
        mold.channel.shutdown(Socket::SHUT_WR)
      rescue IOError, SystemCallError
        @supervisor.kill(mold, :TERM)
      end
    end
  end
end
