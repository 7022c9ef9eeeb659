# frozen_string_literal: true

require_relative "../ops/container_limits"
require_relative "../ops/process_stats"

module Spindle
  module Cluster
    # The master's word on how the cluster fits its container: at boot, what
    # each auto option was settled to (Config::AutoSizing's lines); once
    # every worker first serves, whether the workers fit the container's
    # memory limit, said once.
    #
    # Why then: a worker's memory is known only once it runs, and PSS
    # (shared pages divided among the processes sharing them) is what the
    # processes add up to. Just booted is the least a worker will use: it
    # grows as it serves. So a cluster that does not fit even then will be
    # killed by the kernel's OOM killer once it is busy, and a warning at
    # boot is the last moment an operator can hear of it before the kill.
    # Only once: the master rereading it later would warn about growth that
    # --worker-memory-limit exists to handle.
    class ContainerSizing
      def self.start(config, log, limits: ContainerLimits.read, memory: ProcessStats.method(:memory))
        config.sizing_notes.each { |line| log.info(line) }
        new(config, log, limits.memory, memory)
      end

      # limit: the container's memory Limit, or nil; memory: pid -> { rss:, pss:, uss: } or nil.
      def initialize(config, log, limit, memory)
        @config = config
        @log = log
        @limit = limit
        @memory = memory
        @done = limit.nil? # nothing to fit into
      end

      # Each tick of the master: active, its children booting or serving;
      # desired, how many workers it wants. Returns :fits, :warned, or nil
      # while there is nothing to measure yet (or was already).
      def check(active, desired)
        return if @done

        serving = active.select(&:serving?)
        return if serving.size < desired || desired.zero?

        @done = true
        measure(serving, desired)
      end

      private

      def measure(serving, desired)
        master = @memory.call(Process.pid)&.fetch(:pss)
        worker = serving.filter_map { |c| @memory.call(c.pid)&.fetch(:pss) }.max
        return unless master && worker # a process gone meanwhile: nothing to say

        need = master + (desired * worker)
        sum = "#{workers(desired)} × #{mib(worker)} MiB (the largest worker's PSS, just booted) + the master's " \
              "#{mib(master)} MiB = #{mib(need)} MiB"
        return over(sum) if need > @limit.value
        return over_at_limit(sum, master, desired) if limit_too_high?(master, desired)

        @log.info("spindle: memory: #{sum}, within the container's limit (#{@limit.source})")
        :fits
      end

      def over(sum)
        @log.warn("memory: #{sum}, over the container's limit (#{@limit.source}): busy workers grow past " \
                  "that and the kernel's OOM killer ends them; run fewer workers or give the container more memory")
        :warned
      end

      # --worker-memory-limit is on each worker's private memory: the
      # workers reaching it together must fit too, or the OOM killer acts
      # before the limit does.
      def limit_too_high?(master, desired)
        limit = @config.worker_memory_limit
        limit && master + (desired * limit * 1_048_576) > @limit.value
      end

      def over_at_limit(sum, master, desired)
        limit = @config.worker_memory_limit
        @log.warn("memory: #{sum} fits the container's limit (#{@limit.source}), but #{workers(desired)} at " \
                  "--worker-memory-limit #{limit} MiB + the master = #{mib(master + (desired * limit * 1_048_576))} " \
                  "MiB would not: the OOM killer would act before the limit does (--worker-memory-limit auto " \
                  "sizes it to the container)")
        :warned
      end

      def workers(n) = "#{n} worker#{'s' unless n == 1}"

      def mib(bytes) = (bytes / 1_048_576.0).round
    end
  end
end
