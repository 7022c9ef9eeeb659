# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/thread_cpus"

# --cpu-affinity=app through bin/spindle: the threads that run the app (by
# their names: ps -T shows them) on the first CPU the server may use, and
# the process's main thread (the threads engine's reactor) on every one.
class CpuAffinityAppTest < SpindleIntegrationTest
  def setup
    skip "CPU affinity is Linux's" unless File.exist?("/proc/self/task")
    @allowed = ThreadCpus.of_process(Process.pid)
    skip "one CPU: pinned and unpinned look alike" if @allowed.size < 2
  end

  def test_threads_engine_pins_its_pool_only
    assert_app_threads_pinned("spindle pool", 3, "--engine", "threads", "-t", "3:3")
  end

  # Three loops: --loops counts them, and --threads (the pool's size) does not.
  def test_hybrid_pins_its_loops_only
    assert_app_threads_pinned("spindle loop", 3, "--engine", "hybrid", "-t", "5:5", "--loops", "3")
  end

  private

  def assert_app_threads_pinned(name, count, *args)
    process = spawn_server("--cpu-affinity=app", "-b", LOOPBACK, *args, app_path("echo"))
    cpu = @allowed.first
    assert_match(/app threads on CPU #{cpu} \(--cpu-affinity=app\)/, process.output)
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    wait_until("#{count} threads named #{name.inspect}, all on CPU #{cpu}") do
      named = ThreadCpus.of_threads(process.pid).select { |(thread, _)| thread == name }
      named.size == count && named.map(&:last).uniq == [[cpu]]
    end
    assert_equal @allowed, ThreadCpus.of_process(process.pid), "the main thread stays on every CPU"
  end
end
