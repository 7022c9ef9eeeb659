# frozen_string_literal: true

require "etc"
require_relative "coerce"
require_relative "../ops/container_limits"

module Spindle
  class Config
    # --workers auto, --threads auto and --worker-memory-limit auto: each
    # turned into a number at start, from what the container allows, and a
    # log line saying what was found and why (docs/SIZING.md).
    class AutoSizing
      AUTO = :auto
      # Rails 8's generated config/puma.rb: RAILS_MAX_THREADS, else 3 (Rails
      # 7.2 lowered it from 5: more threads than that mostly wait for the
      # GVL, lengthening every request's latency for little throughput).
      RAILS_THREADS = 3
      # The part of the container's memory the processes are sized to: the
      # rest is left to what is not theirs (page cache, a shell run into the
      # container, a worker's replacement booting beside it).
      MEMORY_SHARE = 0.9

      # limits: a ContainerLimits; cpus: the CPUs this process may run on
      # (Etc.nprocessors is sched_getaffinity's count on Linux, so taskset
      # and cpusets are in it, never more than the machine has).
      def initialize(limits: ContainerLimits.read, cpus: Etc.nprocessors, env: ENV)
        @limits = limits
        @cpus = cpus
        @env = env
      end

      def self.auto?(values) = %i[workers threads worker_memory_limit].any? { |name| values[name] == AUTO }

      # values with each auto option a number, and the log lines saying why.
      def resolve(values)
        values = values.dup
        notes = []
        settle = lambda do |name, (value, note)|
          values[name] = value
          notes << note
        end
        settle.call(:workers, workers) if values[:workers] == AUTO # first: the memory's shares count them
        settle.call(:threads, threads) if values[:threads] == AUTO
        settle.call(:worker_memory_limit, worker_memory_limit(values[:workers])) if values[:worker_memory_limit] == AUTO
        [values, notes]
      end

      # The CPU quota rounded up (a 1.5-CPU quota keeps 2 workers busy in
      # turns, and 1 would leave half a CPU unused), at least 1, and no more
      # than the CPUs allowed: above that, workers only wait for each other.
      def workers
        quota = @limits.cpu
        allowed = "#{@cpus} CPU#{'s' unless @cpus == 1} allowed"
        return [@cpus, "spindle: workers=#{@cpus} (auto: no cgroup CPU quota found; #{allowed})"] unless quota

        n = quota.value.ceil.clamp(1, @cpus)
        [n, "spindle: workers=#{n} (auto: #{quota.source}; #{allowed})"]
      end

      # The threads engine's pool, min = max as Rails' generated puma.rb
      # has it: RAILS_MAX_THREADS, which Rails' database.yml also sizes the
      # connection pool from, so no thread waits for a connection. Not the
      # CPUs: one process runs Ruby on one core at a time whatever its
      # threads; they are for the time requests wait on I/O.
      def threads
        raw = @env["RAILS_MAX_THREADS"]
        n = raw ? Integer(raw, 10, exception: false) : RAILS_THREADS
        raise Error, "RAILS_MAX_THREADS must be a positive integer for threads auto, got #{raw.inspect}" unless
          n&.positive?

        why = raw ? "RAILS_MAX_THREADS=#{n}" : "Rails 8's default; RAILS_MAX_THREADS unset"
        [[n, n], "spindle: threads=#{n}:#{n} (auto: #{why})"]
      end

      # The container's limit, times MEMORY_SHARE, shared by the workers and
      # one more share: in a cluster the master's (with --preload it holds
      # the app, about what a worker's own memory grows to); alone, the new
      # process a restart in place boots beside this one. The limit is on a
      # worker's USS (its private memory), so the shares add up.
      def worker_memory_limit(workers)
        memory = @limits.memory
        return [nil, "spindle: worker_memory_limit: none (auto: no cgroup memory limit found)"] unless memory

        plural = "s" unless workers == 1
        shares, whose = if workers.positive? then [workers + 1, "#{workers} worker#{plural} and the master"]
                        else [2, "this process and the one a restart in place boots beside it"]
                        end
        mib = [(memory.value * MEMORY_SHARE / shares / 1_048_576).floor, 1].max
        [mib, "spindle: worker_memory_limit=#{mib} MiB (auto: #{memory.source} × #{MEMORY_SHARE} / #{shares} " \
              "shares: #{whose})"]
      end
    end
  end
end
