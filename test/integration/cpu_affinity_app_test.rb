# frozen_string_literal: true

require_relative "../support/spindle_process"

# --cpu-affinity=app through bin/spindle: the threads that run the app (by
# their names: ps -T shows them) on the first CPU the server may use, and
# the process's main thread (the threads engine's reactor) on every one.
class CpuAffinityAppTest < SpindleIntegrationTest
  def setup
    skip "CPU affinity is Linux's" unless File.exist?("/proc/self/task")
    @allowed = cpu_list(File.read("/proc/self/status")[/^Cpus_allowed_list:\s*(\S+)/, 1])
    skip "one CPU: pinned and unpinned look alike" if @allowed.size < 2
  end

  def test_threads_engine_pins_its_pool_only
    assert_app_threads_pinned("spindle pool", 3, "--engine", "threads", "-t", "3:3")
  end

  def test_hybrid_pins_its_loops_only
    assert_app_threads_pinned("spindle loop", 2, "--engine", "hybrid", "-t", "2")
  end

  private

  def assert_app_threads_pinned(name, count, *args)
    process = spawn_server("--cpu-affinity=app", *args, app_path("echo"))
    cpu = @allowed.first
    assert_match(/app threads on CPU #{cpu} \(--cpu-affinity=app\)/, process.output)
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    wait_until("#{count} threads named #{name.inspect} on CPU #{cpu}") do
      threads = thread_cpus(process.pid)
      threads.count { |(thread, _)| thread == name } == count && threads.select { |(thread, _)| thread == name }.map(&:last).uniq == [[cpu]]
    end
    assert_equal @allowed, cpu_list(status(process.pid)[/^Cpus_allowed_list:\s*(\S+)/, 1]), "the main thread stays on every CPU"
  end

  # [name, CPUs it may run on] for each thread of pid, from the kernel.
  def thread_cpus(pid)
    Dir["/proc/#{pid}/task/*/status"].filter_map do |path|
      text = File.read(path)
      [text[/^Name:\s*(.*)$/, 1], cpu_list(text[/^Cpus_allowed_list:\s*(\S+)/, 1])]
    rescue Errno::ENOENT
      nil # the thread ended since the listing
    end
  end

  def status(pid) = File.read("/proc/#{pid}/status")

  # "0-2,5" => [0, 1, 2, 5]
  def cpu_list(text)
    text.split(",").flat_map do |part|
      first, last = part.split("-").map(&:to_i)
      (first..(last || first)).to_a
    end
  end
end
