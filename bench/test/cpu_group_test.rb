# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require "fileutils"
require_relative "../lib/bench/cpu_group"

# Where the bench's PostgreSQL is scheduled: a group of its own under the cpu
# hierarchy, v1 or v2, or an explicit reason it is not. A directory stands
# for /sys/fs/cgroup (its cgroup.procs is then a plain file that collects the
# pids written to it).
class CpuGroupTest < Minitest::Test
  def setup = @root = Dir.mktmpdir("bench-cgroup")

  def teardown
    Process.kill(:KILL, @pid) if @pid
    Process.wait(@pid) if @pid
    FileUtils.rm_rf(@root)
  end

  def v1
    FileUtils.mkdir_p(File.join(@root, "cpu"))
    File.write(File.join(@root, "cpu", "cgroup.procs"), "")
  end

  # A process with a child of its own, as the postmaster has its auxiliaries.
  def tree
    @pid = Process.spawn("sh", "-c", "sleep 30 & wait")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    until (child = child_of(@pid))
      flunk "sh started no child in 10 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.01
    end
    [@pid, child]
  end

  def child_of(pid) = Bench::ProcStat.all.find { |e| e.ppid == pid }&.pid

  def test_v1_moves_the_process_and_the_children_it_already_has
    v1
    group = Bench::CpuGroup.new("pg", root: @root)
    assert_equal File.join(@root, "cpu", "pg"), group.path
    parent, child = tree
    assert group.add_tree(parent)
    assert_equal [parent, child].sort, File.readlines(File.join(group.path, "cgroup.procs")).map(&:to_i).sort
    assert_nil group.why_not
  end

  def test_v2_uses_the_unified_root_and_hands_the_cpu_controller_down
    File.write(File.join(@root, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    group = Bench::CpuGroup.new("pg", root: @root)
    assert_equal File.join(@root, "pg"), group.path
    assert group.add_tree(Process.pid)
    assert_equal "+cpu", File.read(File.join(@root, "cgroup.subtree_control"))
    assert_equal [Process.pid], File.readlines(File.join(group.path, "cgroup.procs")).map(&:to_i)
  end

  def test_no_cpu_hierarchy_is_said_not_hidden
    File.write(File.join(@root, "cgroup.controllers"), "memory pids\n")
    group = Bench::CpuGroup.new("pg", root: @root)
    assert_nil group.path
    refute group.add_tree(Process.pid)
    assert_equal "no cpu cgroup hierarchy under #{@root}", group.why_not
  end

  def test_a_group_that_cannot_be_made_is_a_reason_not_an_exception
    v1
    File.write(File.join(@root, "cpu", "pg"), "a file where the group would go")
    group = Bench::CpuGroup.new("pg", root: @root)
    refute group.add_tree(Process.pid)
    assert_match(/\Acould not use #{Regexp.escape(group.path)}: /, group.why_not)
  end

  def test_remove_takes_the_empty_group_away_and_tolerates_a_missing_one
    v1
    group = Bench::CpuGroup.new("pg", root: @root)
    Dir.mkdir(group.path)
    group.remove
    refute Dir.exist?(group.path)
    group.remove
  end
end
