# frozen_string_literal: true

require "test_helper"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/cluster/container_sizing"

# The master's memory check: once every desired worker first serves, the
# workers' PSS against the container's limit, said once (WARN when it does
# not fit). Memory figures come from a table standing for /proc.
class ClusterContainerSizingTest < Minitest::Test
  MIB = 1_048_576
  Child = Struct.new(:pid, :state) do
    def serving? = state == :serving
  end
  Limit = Spindle::ContainerLimits::Limit
  Limits = Struct.new(:cpu, :memory)

  def setup
    @out = StringIO.new
    @err = StringIO.new
    @log = Spindle::Log.new(out: @out, err: @err)
    @pss = { Process.pid => 100 * MIB, 11 => 150 * MIB, 12 => 200 * MIB }
  end

  def start(limit_mib, config: Spindle::Config.new({ workers: 2 }))
    limit = limit_mib && Limit.new(limit_mib * MIB, "cgroup v1 memory.limit_in_bytes (/g)")
    memory = ->(pid) { @pss[pid] && { pss: @pss[pid] } }
    Spindle::Cluster::ContainerSizing.start(config, @log, limits: Limits.new(nil, limit), memory: memory)
  end

  def serving = [Child.new(11, :serving), Child.new(12, :serving)]

  def test_waits_for_every_desired_worker_then_warns_once_when_they_do_not_fit
    sizing = start(450) # 100 + 2 × 200 = 500 MiB
    assert_nil sizing.check([Child.new(11, :serving), Child.new(12, :booting)], 2)
    assert_empty @err.string
    assert_equal :warned, sizing.check(serving, 2)
    assert_match(/WARN spindle: memory: 2 workers × 200 MiB \(the largest worker's PSS, just booted\) \+ the master's 100 MiB = 500 MiB, over the container's limit/,
                 @err.string)
    assert_nil sizing.check(serving, 2)
    assert_equal 1, @err.string.lines.size
  end

  def test_says_at_info_when_they_fit
    sizing = start(1024)
    assert_equal :fits, sizing.check(serving, 2)
    assert_match(/INFO spindle: memory: .* = 500 MiB, within the container's limit/, @out.string)
    assert_empty @err.string
  end

  def test_warns_when_workers_at_their_memory_limit_would_not_fit
    sizing = start(1024, config: Spindle::Config.new({ workers: 2, worker_memory_limit: 600 }))
    assert_equal :warned, sizing.check(serving, 2)
    assert_match(/2 workers at --worker-memory-limit 600 MiB \+ the master = 1300 MiB would not/, @err.string)
  end

  def test_no_container_limit_means_nothing_to_check
    sizing = start(nil)
    assert_nil sizing.check(serving, 2)
    assert_empty @err.string
  end

  def test_logs_the_sizing_notes_at_start
    config = Spindle::Config.new({ workers: :auto }) # this machine's figures
    start(nil, config: config)
    assert_equal 1, config.sizing_notes.size
    assert_includes @out.string, "INFO #{config.sizing_notes.first}\n"
  end
end
