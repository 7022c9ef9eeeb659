# frozen_string_literal: true

require "etc"
require_relative "cpu_affinity"

module Spindle
  # --cpu-affinity=auto's second half: the app's threads are pinned to one
  # CPU (CpuAffinity.pin_app), and this thread watches that CPU. When other
  # processes take a quarter of it or more, look after look, the app's
  # threads move once to a CPU that is mostly free, and the next time
  # (or when none is free) they are unpinned for good: the kernel then
  # places them as it would without the flag.
  #
  # What it sees: the CPU's busy time (/proc/stat) less this process's own
  # CPU time, which is how much of it other work took. Less than that, in
  # fact: this process's unpinned threads (the reactor) may have run on
  # another CPU. That errs towards staying pinned while this process is
  # busy; with the app idle, the figure is exact. Waiting for the GVL does
  # not count: a thread waiting for it sleeps.
  class AffinityWatch
    INTERVAL = 2.0 # seconds between looks, plus up to half again at random
    TAKEN = 0.25   # of the app's CPU, used by others: taken
    LOOKS = 2      # looks in a row that saw it taken, before acting
    FREE = 0.5     # at most this busy: a CPU to move to

    # Where to go when the app's CPU is taken: the least busy other CPU
    # (busy: {cpu => fraction of it used}), if it is free enough and the
    # threads have not moved before; otherwise nil, unpinned.
    def self.destination(busy, from:, moved:)
      return nil if moved

      cpu, used = busy.reject { |c, _| c == from }.min_by { |_, fraction| fraction }
      cpu if used && used <= FREE
    end

    # One reading of the counters: busy seconds per CPU, this process's CPU
    # seconds, and when.
    Reading = Struct.new(:busy, :ours, :at) do
      def self.now
        hz = Etc.sysconf(Etc::SC_CLK_TCK).to_f
        busy = File.foreach("/proc/stat").grep(/\Acpu\d/).to_h do |line|
          name, user, nice, system, _idle, _iowait, irq, softirq, steal = line.split
          [Integer(name.delete_prefix("cpu")), [user, nice, system, irq, softirq, steal].sum(&:to_i) / hz]
        end
        new(busy, Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID),
            Process.clock_gettime(Process::CLOCK_MONOTONIC))
      end

      # Fraction of each CPU used between earlier and this reading.
      def busy_since(earlier)
        span = at - earlier.at
        busy.to_h { |cpu, seconds| [cpu, (seconds - earlier.busy.fetch(cpu, seconds)) / span] }
      end

      # Fraction of cpu that other processes used since earlier.
      def others_since(earlier, cpu)
        [busy_since(earlier).fetch(cpu, 0.0) - (ours - earlier.ours) / (at - earlier.at), 0.0].max
      end
    end

    def initialize(log, interval: INTERVAL)
      @log = log
      @interval = interval
      @moved = false
    end

    def start
      Thread.new do
        Thread.current.name = "spindle affinity"
        watch
      rescue StandardError => e # unwatched, the app's threads must not stay pinned
        CpuAffinity.move_app(nil)
        @log.error("spindle: --cpu-affinity=auto: #{e.class}: #{e.message}; app threads unpinned")
      end
    end

    private

    def watch
      taken = 0
      while (cpu = CpuAffinity.app_cpu)
        share, = look_at(cpu, @interval * (1 + (rand / 2))) # servers alike do not look in step
        taken = share >= TAKEN ? taken + 1 : 0
        next if taken < LOOKS

        taken = 0
        confirm(cpu)
      end
    end

    # A server alike on the same CPU may have seen the same and moved
    # first, leaving this CPU free or the other taken: one more look, begun
    # at a random moment, decides, on where the others are now.
    def confirm(cpu)
      sleep(@interval * rand / 2)
      share, busy = look_at(cpu, @interval / 2)
      act(cpu, share, busy) if share >= TAKEN
    end

    # [fraction of cpu other processes used, {cpu => fraction used}] over
    # the next seconds.
    def look_at(cpu, seconds)
      before = Reading.now
      sleep(seconds)
      now = Reading.now
      [now.others_since(before, cpu), now.busy_since(before)]
    end

    def act(cpu, share, busy)
      to = AffinityWatch.destination(busy, from: cpu, moved: @moved)
      CpuAffinity.move_app(to)
      @moved = true
      where = to ? "moved to CPU #{to}" : "unpinned, for good"
      @log.info("spindle: other processes used #{(share * 100).round}% of CPU #{cpu}; " \
                "app threads #{where} (--cpu-affinity=auto)")
    end
  end
end
