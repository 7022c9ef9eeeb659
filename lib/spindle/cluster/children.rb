# frozen_string_literal: true

module Spindle
  module Cluster
    # The master's record of one child process (a worker or the mold).
    class Child
      attr_reader :index, :channel, :spawned_at
      attr_accessor :pid, :state, :booted_at, :last_checkin, :checkin, :generation, :channel_closed,
                    :kill_at, :trial

      # Workers: :booting → :serving → :retiring (told to drain), or :killed
      # (stuck or too slow to boot: asked for its thread dump, then sent KILL
      # at kill_at). Molds: :mold_pending (a worker told to become one) →
      # :mold_trial (ready; none of its workers serves yet) → :mold (its
      # generation serves; new workers come from it) → :mold_retiring (a
      # newer mold replaced it, or its refork failed). :exited once the
      # registry has let go of it, so whoever still holds the record (a
      # rollout) sees that it is gone. trial: the first worker of a refork's
      # generation, whose failure is the refork's (Reforker).
      # spawned_at: monotonic seconds (a test's clock may give its own).
      def initialize(index:, generation:, channel:, pid: nil,
                     spawned_at: Process.clock_gettime(Process::CLOCK_MONOTONIC))
        @index = index
        @generation = generation
        @channel = channel
        @pid = pid
        @state = :booting
        @spawned_at = spawned_at
        @last_checkin = @spawned_at
        @checkin = nil
        @channel_closed = false
        @kill_at = nil
        @trial = false
      end

      def worker? = %i[booting serving retiring killed].include?(@state)
      def mold? = %i[mold_pending mold_trial mold mold_retiring].include?(@state)
      def serving? = @state == :serving
      def booting? = @state == :booting
      def exited? = @state == :exited
      # Gone, or going: killed or reaped.
      def lost? = @state == :killed || @state == :exited
      def requests = @checkin&.requests.to_i
    end

    # Every child of the master, found by pid or by channel.
    class Children
      include Enumerable

      def initialize
        @by_channel = {}
      end

      def each(&block) = @by_channel.each_value(&block)

      def add(child)
        @by_channel[child.channel] = child
      end

      def remove(child)
        @by_channel.delete(child.channel)
        child.state = :exited
        child.channel.close unless child.channel.closed?
      end

      def by_channel(io) = @by_channel[io]
      def by_pid(pid) = find { |c| c.pid == pid }

      # Channels still worth waiting on: one at end of stream would wake
      # select at once on every tick until its process is reaped.
      def channels = reject(&:channel_closed).map(&:channel)

      # Every channel, for a forked child to close: the master's ends are
      # the master's alone. (A worker holding a sibling's master end would
      # keep that sibling from seeing end of stream when the master dies.)
      def all_channels = @by_channel.keys

      def workers = select(&:worker?)

      # The mold new workers are forked from: only the current one. A mold
      # being replaced carries out the orders it already has, then exits; an
      # order sent to it now would wait behind that exit and never be obeyed.
      def mold = find { |c| c.state == :mold }

      # Workers that count towards capacity: not told to leave.
      def active = select { |c| c.state == :booting || c.state == :serving }
    end
  end
end
