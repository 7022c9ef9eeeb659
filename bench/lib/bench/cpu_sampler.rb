# frozen_string_literal: true

require_relative "proc_stat"
require_relative "child"

module Bench
  # Samples CPU use while wrk runs: wrk's own process, the server's process
  # group, the run's database (its postmaster and the backends under it) and
  # the whole machine. The first and the latest sample bound the window; each
  # figure is cores used on average over it (1.0 = one core busy).
  class CpuSampler
    # kernel_cores: interrupt and softirq time, mostly the loopback network
    # stack working for both wrk and the server, charged to neither.
    # database_cores: 0 when the run has no database.
    Usage = Struct.new(:window, :wrk_cores, :server_cores, :kernel_cores, :machine_cores, :database_cores,
                       keyword_init: true) do
      # Cores used by neither wrk, the server, the database nor the network
      # stack: other work on this shared machine (and the harness, which
      # mostly sleeps). Counting the database here made every round of the
      # database scenarios look contended, and hid the rounds that were.
      def other_cores = [machine_cores - kernel_cores - wrk_cores - server_cores - database_cores.to_f, 0.0].max

      def to_h = super.merge(other_cores: other_cores).transform_values { |v| v.to_f.round(3) }
    end

    Sample = Struct.new(:at, :wrk, :server, :database, :machine, :kernel)

    class << self
      # The run's PostgreSQL (Bench::PgSupport sets it once started).
      attr_accessor :database_pid
    end

    def initialize(wrk_pid:, server_pid:, database_pid: CpuSampler.database_pid)
      @wrk_pid = wrk_pid
      @server_pid = server_pid
      @database_pid = database_pid
      @first = nil
      @last = nil
    end

    # Called every few hundred milliseconds while wrk runs. A sample taken
    # after wrk is gone is dropped: it would count no wrk time.
    def sample
      wrk = ProcStat.process_ticks(@wrk_pid) or return
      entries = ProcStat.all # one pass over /proc for both trees
      database = @database_pid ? ProcStat.tree_ticks(@database_pid, entries) : {}
      taken = Sample.new(Child.now, wrk, ProcStat.tree_ticks(@server_pid, entries), database, *ProcStat.machine_ticks)
      @first ||= taken
      @last = taken
    end

    # nil when fewer than two samples were taken (a run too short to judge).
    def usage
      return nil unless @first && @last && @last.at > @first.at

      window = @last.at - @first.at
      cores = ->(ticks) { ticks / ProcStat::TICK / window }
      Usage.new(window: window, wrk_cores: cores.call(@last.wrk - @first.wrk),
                server_cores: cores.call(delta(:server)), kernel_cores: cores.call(@last.kernel - @first.kernel),
                machine_cores: cores.call(@last.machine - @first.machine), database_cores: cores.call(delta(:database)))
    end

    private

    # A process that appeared during the window (a restarted worker, a new
    # backend) counts from zero; one that vanished counts up to its last
    # sample only.
    def delta(tree)
      first = @first[tree]
      @last[tree].sum { |pid, ticks| ticks - first.fetch(pid, 0) }
    end

  end
end
