# frozen_string_literal: true

require_relative "proc_stat"
require_relative "child"

module Bench
  # Samples CPU use while wrk runs: wrk's own process, the server's process
  # group and the whole machine. The first and the latest sample bound the
  # window; each figure is cores used on average over it (1.0 = one core busy).
  class CpuSampler
    # kernel_cores: interrupt and softirq time, mostly the loopback network
    # stack working for both wrk and the server, charged to neither.
    Usage = Struct.new(:window, :wrk_cores, :server_cores, :kernel_cores, :machine_cores, keyword_init: true) do
      # Cores used by neither wrk, the server nor the network stack: other
      # work on this shared machine (and the harness, which mostly sleeps).
      def other_cores = [machine_cores - kernel_cores - wrk_cores - server_cores, 0.0].max

      def to_h = super.merge(other_cores: other_cores).transform_values { |v| v.round(3) }
    end

    Sample = Struct.new(:at, :wrk, :server, :machine, :kernel)

    def initialize(wrk_pid:, server_pid:)
      @wrk_pid = wrk_pid
      @server_pid = server_pid
      @first = nil
      @last = nil
    end

    # Called every few hundred milliseconds while wrk runs. A sample taken
    # after wrk is gone is dropped: it would count no wrk time.
    def sample
      wrk = ProcStat.process_ticks(@wrk_pid) or return
      taken = Sample.new(Child.now, wrk, ProcStat.tree_ticks(@server_pid), *ProcStat.machine_ticks)
      @first ||= taken
      @last = taken
    end

    # nil when fewer than two samples were taken (a run too short to judge).
    def usage
      return nil unless @first && @last && @last.at > @first.at

      window = @last.at - @first.at
      cores = ->(ticks) { ticks / ProcStat::TICK / window }
      Usage.new(window: window, wrk_cores: cores.call(@last.wrk - @first.wrk),
                server_cores: cores.call(server_delta), kernel_cores: cores.call(@last.kernel - @first.kernel),
                machine_cores: cores.call(@last.machine - @first.machine))
    end

    private

    # A process that appeared during the window (a restarted worker) counts
    # from zero; one that vanished counts up to its last sample only.
    def server_delta
      @last.server.sum { |pid, ticks| ticks - @first.server.fetch(pid, 0) }
    end

  end
end
