# frozen_string_literal: true

require "test_helper"
require "spindle/ops/cpu_affinity"

# Pinning a process to one CPU: every thread, those started before and after.
# Each case runs in a forked child, so the suite itself stays unpinned.
class CpuAffinityTest < Minitest::Test
  CpuAffinity = Spindle::CpuAffinity

  def test_reads_the_cpus_this_thread_may_use
    cpus = CpuAffinity.cpus(0)
    listed = File.read("/proc/thread-self/status")[/^Cpus_allowed_list:\s*(\S+)/, 1]
    assert_equal listed, compact(cpus)
  end

  def test_pins_every_thread_of_the_process_to_the_slot_s_cpu
    allowed = CpuAffinity.cpus(0)
    result = in_child do
      started = Thread::Queue.new
      before = Thread.new { started << :before; sleep }
      started.pop
      cpu = CpuAffinity.pin(1)
      after = Thread.new { started << :after; sleep }
      started.pop
      sets = Dir.children("/proc/self/task").map { |tid| CpuAffinity.cpus(Integer(tid)) }.uniq
      [before, after].each(&:kill)
      [cpu, sets, CpuAffinity.allowed]
    end
    cpu, sets, still_allowed = result
    assert_equal allowed[1 % allowed.size], cpu
    assert_equal [[cpu]], sets
    assert_equal allowed, still_allowed, "the list read before pinning is kept, for a worker forked from this one"
  end

  # --cpu-affinity=app: only a thread that runs the app pins itself, for
  # as long as it runs it; the thread that chose the CPU (the reactor's,
  # under threads) stays on all.
  def test_app_threads_pin_themselves_and_no_other
    allowed = CpuAffinity.cpus(0)
    cpu, app, chooser, other = in_child do
      chosen = CpuAffinity.pin_app(1)
      app = Thread.new { CpuAffinity.app_thread { CpuAffinity.cpus(0) } }.value
      other = Thread.new { CpuAffinity.cpus(0) }.value # may run on the app thread's native thread
      [chosen, app, CpuAffinity.cpus(0), other]
    end
    assert_equal allowed[1 % allowed.size], cpu
    assert_equal [cpu], app
    assert_equal allowed, chooser
    assert_equal allowed, other
  end

  # --cpu-affinity=auto's watch moves the app's threads while they run,
  # and unpins them; a thread started after a move goes where they went.
  def test_moves_running_app_threads_then_unpins_them
    allowed = CpuAffinity.cpus(0)
    first, moved, later, unpinned = in_child do
      CpuAffinity.pin_app(0)
      started = Thread::Queue.new
      go = Thread::Queue.new
      app = Thread.new { CpuAffinity.app_thread { started << :running; go.pop } }
      started.pop
      tid = CpuAffinity.app_tids.first
      seen = [CpuAffinity.cpus(tid)]
      CpuAffinity.move_app(allowed.last)
      seen << CpuAffinity.cpus(tid)
      seen << Thread.new { CpuAffinity.app_thread { CpuAffinity.cpus(0) } }.value
      CpuAffinity.move_app(nil)
      seen << CpuAffinity.cpus(tid)
      go << :done
      app.join
      seen
    end
    assert_equal [allowed.first], first
    assert_equal [allowed.last], moved
    assert_equal [allowed.last], later
    assert_equal allowed, unpinned
  end

  # A CPU the process may no longer use (its cpuset shrank): the app's
  # threads go on, where they were.
  def test_an_app_thread_outlives_a_cpu_it_cannot_have
    allowed = CpuAffinity.cpus(0)
    gone = allowed.max + 1
    value, cpus = in_child do
      CpuAffinity.pin_app(0)
      CpuAffinity.move_app(gone)
      Thread.new { CpuAffinity.app_thread { [:served, CpuAffinity.cpus(0)] } }.value
    end
    assert_equal :served, value
    assert_equal allowed, cpus
  end

  def test_base_is_one_of_the_allowed_cpus_and_drawn_once
    size = CpuAffinity.cpus(0).size
    draws = in_child { [CpuAffinity.base, CpuAffinity.base] }
    assert_equal 1, draws.uniq.size
    assert_includes 0...size, draws.first
  end

  def test_an_app_thread_is_left_alone_when_no_cpu_was_chosen
    allowed = CpuAffinity.cpus(0)
    assert_equal allowed, in_child { Thread.new { CpuAffinity.app_thread { CpuAffinity.cpus(0) } }.value }
  end

  def test_slots_go_round_the_allowed_cpus
    allowed = CpuAffinity.cpus(0)
    assert_equal allowed.first, in_child { CpuAffinity.pin(allowed.size) }
  end

  # A USR2 successor starts from a pinned process's thread: it must get
  # every CPU, and choose its own.
  def test_a_process_started_unpinned_gets_every_allowed_cpu
    allowed = CpuAffinity.cpus(0)
    inside, started, after = in_child do
      CpuAffinity.pin(0)
      during = CpuAffinity.unpinned do
        [CpuAffinity.cpus(0), IO.popen(["grep", "Cpus_allowed_list", "/proc/self/status"], &:read)]
      end
      [*during, CpuAffinity.cpus(0)]
    end
    assert_equal allowed, inside
    assert_equal compact(allowed), started.split.last
    assert_equal [allowed.first], after, "pinned again after"
  end

  def test_a_process_that_never_pinned_itself_just_runs_the_block
    assert_equal :ran, in_child { CpuAffinity.unpinned { :ran } }
  end

  def test_refuses_an_empty_or_impossible_cpu_list
    assert_raises(ArgumentError) { CpuAffinity.set(0, []) }
    assert_raises(ArgumentError) { CpuAffinity.set(0, [-1]) }
  end

  private

  # The block's value, from a forked child.
  def in_child
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      Marshal.dump(yield, writer)
      exit!(0)
    end
    writer.close
    value = Marshal.load(reader)
    Process.wait(pid)
    value
  ensure
    reader&.close
  end

  # [0, 1, 2, 5] => "0-2,5"
  def compact(cpus)
    cpus.slice_when { |a, b| b != a + 1 }.map { |run| run.size > 1 ? "#{run.first}-#{run.last}" : run.first.to_s }.join(",")
  end
end
