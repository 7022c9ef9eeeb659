# frozen_string_literal: true

require_relative "../http/parser" # loads the extension, which defines SharedCounts
require_relative "timeouts"
require_relative "../ops/live_pid"

module Spindle
  module Engine
    # A cluster's workers wait on the same listeners, and the one that wakes
    # first takes what is in the backlog. Each took clients as it woke, so a
    # burst of keep-alive clients split as it happened to, often very
    # unevenly, and one worker could hold all of a load's connections for a
    # whole run while its sibling idled (PERFORMANCE.md, "The figures behind lib/'s comments").
    #
    # So the workers publish how many connections each holds, in memory the
    # master mapped before it forked them (SharedCounts: no lock, no system
    # call), and a worker that holds more than SLACK above the least loaded
    # of its siblings lets them go first (Deference): it leaves the next
    # client in the backlog for OTHERS_FIRST, where an idle sibling, woken by
    # the same client, takes it. If no sibling took any client meanwhile,
    # each is busy or was not scheduled, and it takes SLACK more before it
    # waits again: waiting before every client would slow a busy cluster
    # down. This is hybrid's LoopShare between processes.
    #
    # Layout: slot 0 counts the clients every worker ever accepted; worker
    # slot k is a pid (0: free) and the connections that worker holds. A
    # replacement starts before the worker it replaces has left, so there are
    # more slots than workers; a worker that finds none free runs without a
    # share. A crashed worker's slot is freed by the first sibling that would
    # have deferred to it, or by the next worker to join.
    class SiblingShare
      SLACK = 2
      SURPLUS = 2 * SLACK
      OTHERS_FIRST = 0.005
      MIN_SLOTS = 64

      # In the master, before it forks any worker.
      def self.for_cluster(workers) = new(table([workers * 4, MIN_SLOTS].max))

      # The shared table for that many worker slots: the total accepted, then
      # each slot's pid and held count.
      def self.table(slots) = SharedCounts.new(1 + (2 * slots))

      def initialize(counts)
        @counts = counts
        @slots = (counts.size - 1) / 2
        @slot = nil # this worker's, once joined
        @own = 0 # clients this worker accepted
        @held = 0 # what it last published
      end

      # In the worker, before it serves: takes a free slot, or that of a
      # worker that is gone. false when there is none (it then runs alone).
      # phase: the worker's Phase; the share leaves once it drains.
      def join(pid = Process.pid, phase: nil)
        @slot = (0...@slots).find { |k| claim(k, pid) }
        return false unless @slot

        @counts[held_index(@slot)] = @held = 0
        phase&.on_change { leave if phase.draining? }
        true
      end

      # Once it stops accepting (a drain): its siblings no longer wait for it.
      # From any thread; a second call does nothing.
      def leave
        slot = @slot or return
        @slot = nil
        @counts[held_index(slot)] = 0
        @counts.swap(pid_index(slot), Process.pid, 0)
      end

      # Publishes the connections this worker holds (only when it changed).
      def held=(count)
        return if count == @held || @slot.nil?

        @held = count
        @counts[held_index(@slot)] = count
      end

      # This worker accepted a client, and now holds `held` connections
      # (nil: published separately).
      def accepted!(held = nil)
        @own += 1
        @counts.add(0, 1)
        self.held = held if held
      end

      # Clients its siblings accepted, ever.
      def others_accepted = @counts[0] - @own

      # Holding `held`, is this worker more than `by` above a live sibling?
      def ahead?(held, by = SLACK)
        return false unless @slot

        most = held - by
        (0...@slots).any? { |k| k != @slot && below?(k, most) }
      end

      # More than SURPLUS above a sibling with what it last published: its
      # clients came while the sibling looked busier than it was (its count
      # still held connections whose clients had closed them), and will not
      # move by themselves while they stay connected (Rebalancer).
      def surplus? = ahead?(@held, SURPLUS)

      def deference = Deference.new(self)

      # One acceptor's side of the rule (a hybrid worker's loops each have
      # their own): #defer? before each accept says whether to leave the
      # client to the siblings for OTHERS_FIRST first.
      #
      # A stall ends after SLACK more clients, or after STALL_KEPT, even if
      # no sibling took a client: a sibling not scheduled within
      # OTHERS_FIRST on a busy machine is not a busy sibling, and a stall
      # kept until a sibling took a client again outlived the burst that
      # caused it (the next burst went whole to the worker that woke first:
      # 16/0, three bursts in twenty-five).
      class Deference
        STALL_KEPT = 0.05

        def initialize(share)
          @share = share
          @deferred_at = nil # others_accepted when it last deferred
          @stalled_at = nil # others_accepted when a deferral found them taking none
          @stalled_below = 0 # while stalled, it takes clients until it holds this many
          @stalled_until = 0
        end

        def defer?(held)
          others = @share.others_accepted
          settle(others, held) if @deferred_at
          return false if stalled?(others, held) || !@share.ahead?(held)

          @deferred_at = others
          true
        end

        private

        # After a deferral: did the siblings take any client meanwhile?
        def settle(others, held)
          @stalled_at = others == @deferred_at ? others : nil
          @stalled_below = held + SLACK
          @stalled_until = Timeouts.now + STALL_KEPT
          @deferred_at = nil
        end

        def stalled?(others, held)
          others == @stalled_at && held < @stalled_below && Timeouts.now < @stalled_until
        end
      end

      private

      def pid_index(slot) = 1 + (2 * slot)
      def held_index(slot) = 2 + (2 * slot)

      def claim(slot, pid)
        current = @counts[pid_index(slot)]
        return @counts.swap(pid_index(slot), 0, pid) if current.zero?

        !alive?(current) && @counts.swap(pid_index(slot), current, pid)
      end

      # A sibling's slot holding fewer than `most` connections, its process
      # alive (a dead one's slot is freed here).
      def below?(slot, most)
        pid = @counts[pid_index(slot)]
        return false if pid.zero? || @counts[held_index(slot)] >= most
        return true if alive?(pid)

        @counts.swap(pid_index(slot), pid, 0)
        false
      end

      def alive?(pid) = LivePid.alive?(pid)
    end
  end
end
