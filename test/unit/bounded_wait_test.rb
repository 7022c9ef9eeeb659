# frozen_string_literal: true

require "test_helper"
require "rbconfig"
require "tmpdir"
require_relative "../support/bounded_wait"

# bin/test's deadline for what it runs (test/support/bounded_wait.rb), with
# real child processes.
class BoundedWaitTest < Minitest::Test
  def test_a_child_that_ends_in_time_gives_its_status
    pid = Process.spawn(RbConfig.ruby, "-e", "exit 3")
    assert_equal 3, BoundedWait.wait(pid, 60).exitstatus
  end

  # The hang CI once met: a leader waiting on a process it started, which
  # never ends. The whole group goes, the grandchild too.
  def test_a_group_past_its_deadline_is_stopped_whole
    Dir.mktmpdir do |dir|
      file = File.join(dir, "grandchild")
      leader = Process.spawn(RbConfig.ruby, "-e", <<~RUBY, pgroup: true)
        pid = spawn(RbConfig.ruby, "-e", "sleep")
        File.write(#{file.dump}, pid.to_s)
        Process.wait(pid)
      RUBY
      grandchild = wait_for_pid(file)
      assert_nil BoundedWait.wait(leader, 0.5, group: true)
      assert gone_within?(grandchild, 30), "the grandchild #{grandchild} outlived its group's deadline"
    ensure
      BoundedWait.signal(:KILL, -leader) if leader # whatever a failure left
    end
  end

  private

  def wait_for_pid(file)
    deadline = now + 30
    sleep 0.05 until (File.size?(file) && File.read(file).to_i.positive?) || now > deadline
    File.read(file).to_i
  end

  # Gone, or a zombie nobody reaped yet (whoever adopted it).
  def gone_within?(pid, seconds)
    deadline = now + seconds
    until now > deadline
      state = File.read("/proc/#{pid}/stat")[/\) (\S)/, 1]
      return true if state == "Z"

      sleep 0.05
    end
    false
  rescue Errno::ENOENT, Errno::ESRCH
    true
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
