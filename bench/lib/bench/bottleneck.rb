# frozen_string_literal: true

require "etc"

module Bench
  # Decides whether a measurement tells us about the server or only about wrk.
  #
  # wrk shares the machine's cores with the server. When wrk's threads are
  # all busy (wrk_util >= WRK_BUSY) while the server still has spare CPU
  # (server_util < SERVER_BUSY), the server was waiting for wrk: the figure is
  # a lower bound on the server and is reported as "load-generator bound",
  # never as the server's throughput.
  #
  #   wrk, server = their CPU, each plus its share of the interrupt/softirq
  #                 time (the loopback network stack), split in proportion
  #   wrk_util    = wrk / (window * wrk threads)
  #   budget      = min(server processes, nproc - wrk)   # cores the server could use
  #   server_util = server / (window * budget)
  #
  # When both are busy the machine is simply full; that figure is reported
  # (every figure here is "on 2 cores shared with wrk").
  module Bottleneck
    WRK_BUSY = 0.90
    SERVER_BUSY = 0.90
    # More than this many cores used by neither wrk, the server nor the
    # network stack: something else on the shared machine took CPU.
    OTHER_BUSY = 0.25

    Verdict = Struct.new(:bound, :wrk_util, :server_util, :server_budget, keyword_init: true) do
      def to_h = super.transform_values { |v| v.is_a?(Float) ? v.round(3) : v }
    end

    module_function

    def contended?(cpu)
      cpu.to_h[:other_cores].to_f > OTHER_BUSY
    end

    def judge(usage, wrk_threads:, processes:, nproc: Etc.nprocessors)
      return Verdict.new(bound: false) unless usage

      wrk, server = with_kernel_share(usage)
      wrk_util = wrk / wrk_threads
      budget = [processes.to_f, nproc - wrk].min.clamp(0.1, nil)
      server_util = server / budget
      Verdict.new(bound: wrk_util >= WRK_BUSY && server_util < SERVER_BUSY,
                  wrk_util: wrk_util, server_util: server_util, server_budget: budget)
    end

    def with_kernel_share(usage)
      both = usage.wrk_cores + usage.server_cores
      return [usage.wrk_cores, usage.server_cores] unless both.positive?

      kernel = usage.kernel_cores.to_f
      [usage.wrk_cores + kernel * usage.wrk_cores / both, usage.server_cores + kernel * usage.server_cores / both]
    end
  end
end
