# frozen_string_literal: true

require "test_helper"
require "spindle/ops/affinity_watch"

# --cpu-affinity=auto's watch: how much of the app's CPU other processes
# took, from two readings, and where the app's threads go then.
class AffinityWatchTest < Minitest::Test
  Watch = Spindle::AffinityWatch
  Reading = Watch::Reading

  def test_others_share_is_the_cpu_s_busy_time_less_this_process_s
    before = Reading.new({ 0 => 10.0, 1 => 5.0 }, 3.0, 100.0)
    after = Reading.new({ 0 => 12.0, 1 => 5.5 }, 3.8, 102.0) # CPU 0 fully busy, 0.4 of it ours
    assert_in_delta 0.6, after.others_since(before, 0)
    assert_equal({ 0 => 1.0, 1 => 0.25 }, after.busy_since(before))
  end

  def test_this_process_busier_than_the_cpu_counts_as_no_one_else
    before = Reading.new({ 0 => 0.0 }, 0.0, 0.0)
    after = Reading.new({ 0 => 1.0 }, 1.5, 1.0) # its reactor ran on another CPU
    assert_equal 0.0, after.others_since(before, 0)
  end

  def test_moves_once_to_the_least_busy_free_cpu_then_unpins
    busy = { 0 => 1.0, 1 => 0.7, 2 => 0.1, 3 => 0.3 }
    assert_equal 2, Watch.destination(busy, from: 0, moved: false)
    assert_nil Watch.destination(busy, from: 0, moved: true)
  end

  def test_unpins_when_no_other_cpu_is_free
    assert_nil Watch.destination({ 0 => 1.0, 1 => 0.9 }, from: 0, moved: false)
    assert_nil Watch.destination({ 0 => 1.0 }, from: 0, moved: false)
  end

  def test_reads_this_machine_s_counters
    skip "Linux's /proc/stat" unless File.exist?("/proc/stat")
    reading = Reading.now
    assert_empty Spindle::CpuAffinity.cpus(0) - reading.busy.keys, "every CPU this process may use is counted"
    assert_operator reading.ours, :>, 0
  end
end
