# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/thread_cpus"
require "spindle/ops/cpu_affinity"

# --cpu-affinity=auto, the default, through bin/spindle: the threads
# engine's pool on one CPU, and off it once another process takes that CPU;
# the blocking engine never pinned.
class CpuAffinityAutoTest < SpindleIntegrationTest
  SPIN_SECONDS = 60 # the busy process ends by itself, whatever happens here

  def setup
    skip "CPU affinity is Linux's" unless File.exist?("/proc/self/task")
    @allowed = ThreadCpus.of_process(Process.pid)
    skip "one CPU: pinned and unpinned look alike" if @allowed.size < 2
    @spinner = nil
  end

  def teardown
    if @spinner
      Process.kill(:KILL, @spinner)
      Process.wait(@spinner)
    end
    super
  end

  def test_pool_leaves_its_cpu_when_another_process_takes_it
    process = spawn_server("-b", LOOPBACK, "--engine", "threads", "-t", "2:2", app_path("echo"))
    cpu = Integer(process.output[/app threads on CPU (\d+) \(--cpu-affinity=auto/, 1] || flunk(process.output))
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    wait_until("the pool's 2 threads on CPU #{cpu}") { pool_cpus(process) == [[cpu]] }

    @spinner = spin_on(cpu)
    # The line comes after the move: waiting on the threads alone, the
    # output may not have it yet.
    moved = /other processes used \d+% of CPU #{cpu}; app threads (moved to CPU \d+|unpinned)/
    wait_until("the watch's line", deadline: 30) { process.output.match?(moved) }
    cpus = pool_cpus(process)
    refute_empty cpus
    refute_includes cpus, [cpu], "the pool off CPU #{cpu}"
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
  end

  def test_blocking_engine_is_left_unpinned
    process = spawn_server("-b", LOOPBACK, "--engine", "blocking", app_path("echo"))
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    refute_match(/app threads on CPU/, process.output)
    assert_equal [@allowed], ThreadCpus.of_threads(process.pid).map(&:last).uniq
  end

  private

  def pool_cpus(process)
    ThreadCpus.of_threads(process.pid).select { |(name, _)| name == "spindle pool" }.map(&:last).uniq
  end

  # A process that keeps cpu busy for SPIN_SECONDS at most.
  def spin_on(cpu)
    fork do
      Spindle::CpuAffinity.set(0, [cpu])
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SPIN_SECONDS
      nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      exit!(0)
    end
  end
end
