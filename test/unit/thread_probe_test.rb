# frozen_string_literal: true

require "test_helper"
require "spindle/engine/thread_probe"

# The stall detector's view of a loop thread, on real threads: CPU time, and
# a thread kept from running (runnable, or on a futex for the GVL) told apart
# from one blocked in a call.
class ThreadProbeTest < Minitest::Test
  def teardown
    @threads&.each { |thread| thread.kill.join }
  end

  def test_a_busy_thread_shows_cpu_time_and_wants_to_run
    probe = Spindle::Engine::ThreadProbe.new(spawn_thread { loop { nil } })

    assert until_true { probe.cpu_seconds.to_f.positive? }, "the busy thread never showed CPU time"
    assert probe.runnable? || probe.waiting_on_futex?, "a busy thread runs, or waits for the GVL"
  end

  def test_a_thread_blocked_in_a_read_uses_no_more
    reader, writer = IO.pipe
    blocked = spawn_thread { reader.read }
    probe = Spindle::Engine::ThreadProbe.new(blocked)
    assert until_true { blocked.status == "sleep" }
    before = probe.cpu_seconds

    spawn_thread { 1_000_000.times { nil } }.join # time passes, on the CPU, in another thread
    assert_equal before, probe.cpu_seconds
    refute probe.runnable?
    refute probe.waiting_on_futex?
  ensure
    blocked&.kill&.join
    writer&.close
    reader&.close
  end

  def test_a_finished_thread_is_unknown_not_an_error
    thread = Thread.new { nil }.tap(&:join)
    assert_nil Spindle::Engine::ThreadProbe.new(thread).cpu_seconds
  end

  private

  def spawn_thread(&block) = (@threads ||= []).push(Thread.new(&block)).last

  # Polls a condition up to 500 times, letting other threads run between.
  def until_true
    500.times do
      return true if yield

      sleep 0.01
    end
    false
  end
end
