# frozen_string_literal: true

require "minitest/autorun"
require "rbconfig"
require_relative "../lib/bench/cpu_sampler"
require_relative "../lib/bench/bottleneck"

# The run's database is counted apart from "other": on the database
# scenarios it used to make every round look contended.
class CpuSamplerTest < Minitest::Test
  def test_the_database_is_not_other_work
    usage = Bench::CpuSampler::Usage.new(window: 1.0, wrk_cores: 0.2, server_cores: 1.0, kernel_cores: 0.1,
                                         machine_cores: 1.9, database_cores: 0.5)
    assert_in_delta 0.1, usage.other_cores, 0.001
    refute Bench::Bottleneck.contended?(usage.to_h)
    without = usage.dup.tap { |u| u.database_cores = nil } # a run with no database, or an older record
    assert_in_delta 0.6, without.other_cores, 0.001
    assert Bench::Bottleneck.contended?(without.to_h)
  end

  # A real process tree stands in for PostgreSQL: a parent that sleeps and a
  # child (a backend) that computes. Its CPU lands in database_cores. Each
  # tree is a process group, stopped with KILL: a TERM that reaches a Ruby
  # still starting can be lost (1 in 20 on 3.1 and on 3.3, by hand), and the
  # wait for it then never ends.
  def test_samples_the_database_tree
    database = spawn(RbConfig.ruby, "-e", "spawn(RbConfig.ruby, '-e', 'loop {}'); sleep", pgroup: true)
    server = spawn(RbConfig.ruby, "-e", "sleep", pgroup: true)
    sampler = Bench::CpuSampler.new(wrk_pid: Process.pid, server_pid: server, database_pid: database)
    sampler.sample
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    sleep 0.05 until (usage = sample(sampler)).database_cores.positive? ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_operator usage.database_cores, :>, 0, "the busy child's ticks were not counted as the database's"
  ensure
    [database, server].compact.each do |pid|
      Process.kill(:KILL, -pid)
      Process.wait(pid)
    end
  end

  private

  def sample(sampler)
    sampler.sample
    sampler.usage
  end
end
