# frozen_string_literal: true

module Spindle
  module Cluster
    # The master's record of one child process (a worker or the mold).
    class Child
      attr_reader :index, :channel, :spawned_at
      attr_accessor :pid, :state, :booted_at, :last_checkin, :checkin, :generation

      # state: :booting → :serving → :retiring (told to drain); :mold_pending →
      # :mold for the worker chosen to become a mold.
      def initialize(index:, generation:, channel:, pid: nil)
        @index = index
        @generation = generation
        @channel = channel
        @pid = pid
        @state = :booting
        @spawned_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @last_checkin = @spawned_at
        @checkin = nil
      end

      def worker? = %i[booting serving retiring].include?(@state)
      def mold? = %i[mold_pending mold].include?(@state)
      def serving? = @state == :serving
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
        child.channel.close unless child.channel.closed?
      end

      def by_channel(io) = @by_channel[io]
      def by_pid(pid) = find { |c| c.pid == pid }
      def channels = @by_channel.keys
      def workers = select(&:worker?)
      def mold = find(&:mold?)

      # Workers that count towards capacity: not told to leave.
      def active = select { |c| c.state == :booting || c.state == :serving }

      def free_index(count)
        used = active.map(&:index)
        (0...count).find { |i| !used.include?(i) } || count
      end
    end
  end
end
