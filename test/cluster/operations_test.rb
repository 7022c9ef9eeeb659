# frozen_string_literal: true

require "open3"
require_relative "../support/cluster_helpers"
require_relative "../support/thread_cpus"

# The operator's side: spindlectl, the allocator, memory-limit recycling.
class OperationsTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")
  CTL = File.join(SpindleProcess::ROOT, "bin", "spindlectl")

  def test_spindlectl_prints_stats_as_a_table_and_as_json
    start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    table = ctl_table
    assert_match(/^index\s+pid\s+state\s+generation\s+requests.*pss/, table)
    assert_equal 2, table.lines.grep(/\bserving\b/).size
    json, = Open3.capture2e(CTL, "--control", "unix://#{@control}", "--json", "stats")
    assert_equal 2, JSON.parse(json)["totals"]["workers"]
  end

  def test_spindlectl_commands_reach_the_master
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    out, status = Open3.capture2e(CTL, "--control", "unix://#{@control}", "add-worker")
    assert status.success?, out
    wait_until("2 workers") { serving_workers.size == 2 }
    Open3.capture2e(CTL, "--control", "unix://#{@control}", "stop")
    wait_until("the master stopped") { !app.alive? }
  end

  def test_control_socket_is_private
    start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    assert_equal 0o600, File.stat(@control).mode & 0o777
  end

  def test_jemalloc_allocator_is_used_and_reported
    start_cluster("--allocator", "jemalloc", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    assert_equal "jemalloc", stats["master"]["allocator"]
    assert_equal "narenas:2", stats["master"]["malloc_conf"]
    assert_match(/allocator jemalloc \(MALLOC_CONF=narenas:2\)$/, ctl_table.lines.first)
  end

  def test_glibc_allocator_can_be_chosen
    start_cluster("--allocator", "glibc", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    assert_equal ["glibc", "2", nil], stats["master"].values_at("allocator", "malloc_arena_max", "malloc_conf")
    assert_match(/allocator glibc \(MALLOC_ARENA_MAX=2\)$/, ctl_table.lines.first)
  end

  # Each worker, with every thread it runs, on the CPU of its index, round
  # the CPUs the server may use; a replacement on its predecessor's.
  def test_cpu_affinity_pins_each_worker_and_its_threads
    allowed = ThreadCpus.of_process(Process.pid)
    start_cluster("--cpu-affinity", "--engine", "threads", "-t", "3:3", APP, workers: 3)
    wait_until("3 workers serving") { serving_workers.size == 3 }
    pinned = -> { serving_workers.to_h { |w| [w["index"], thread_cpus(w["pid"])] } }
    expected = (0..2).to_h { |index| [index, [[allowed[index % allowed.size]]]] }
    wait_until("each worker's threads on its CPU") { pinned.call == expected }

    Process.kill(:KILL, serving_workers.find { |w| w["index"] == 1 }["pid"])
    wait_until("worker 1 replaced, on its CPU") { serving_workers.size == 3 && pinned.call == expected }
  end

  def ctl_table
    table, status = Open3.capture2e(CTL, "--control", "unix://#{@control}", "stats")
    assert status.success?, table
    table
  end

  def test_a_worker_over_its_memory_limit_is_recycled_with_a_replacement_first
    app = start_cluster("--worker-memory-limit", "1", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    first = serving_workers.first["pid"]
    20.times { ClusterHelpers.get(app, "/") } # a Ruby worker's private memory is well over 1 MiB
    wait_until("the worker recycled") { !serving_workers.map { |w| w["pid"] }.include?(first) }
    assert_match(/over 1 MiB/, app.output)
    assert_equal 200, ClusterHelpers.get(app, "/").status
  end

  private

  # The distinct CPU sets of a process's threads.
  def thread_cpus(pid) = ThreadCpus.of_threads(pid).map(&:last).uniq
end
