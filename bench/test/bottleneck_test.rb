# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench/cpu_sampler"
require_relative "../lib/bench/bottleneck"

class BottleneckTest < Minitest::Test
  def usage(wrk:, server:, kernel: 0.0)
    Bench::CpuSampler::Usage.new(window: 1.0, wrk_cores: wrk, server_cores: server, kernel_cores: kernel,
                                 machine_cores: wrk + server + kernel)
  end

  def judge(usage, processes: 1)
    Bench::Bottleneck.judge(usage, wrk_threads: 1, processes: processes, nproc: 2)
  end

  def test_saturated_wrk_and_idle_server_is_bound
    assert judge(usage(wrk: 0.97, server: 0.5)).bound
  end

  def test_both_saturated_is_a_full_machine_not_bound
    refute judge(usage(wrk: 0.95, server: 0.97), processes: 2).bound
  end

  def test_busy_server_with_idle_wrk_is_not_bound
    refute judge(usage(wrk: 0.3, server: 0.98)).bound
  end

  def test_network_stack_time_is_shared_in_proportion
    verdict = judge(usage(wrk: 0.8, server: 0.4, kernel: 0.3))
    assert_in_delta 1.0, verdict.wrk_util, 0.001
    assert verdict.bound
  end

  def test_no_samples_is_never_bound
    refute Bench::Bottleneck.judge(nil, wrk_threads: 1, processes: 1).bound
  end
end
