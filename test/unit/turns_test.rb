# frozen_string_literal: true

require "test_helper"
require "spindle/engine/turns"
require_relative "../support/call_counter"

# A thread's share of the GVL: it passes the GVL on after a request only
# once it has served for its slice, then starts a new slice.
class TurnsTest < Minitest::Test
  include CallCounter

  Turns = Spindle::Engine::Turns

  def test_the_slices_of_the_others_add_up_to_the_turn_wait
    [1, 2, 4, 5, 16].each do |others|
      assert_in_delta Turns::TURN_WAIT, Turns.slice(others) * others, 1e-12, "#{others} others"
    end
  end

  # Ruby 3.3 hands the GVL to the longest waiter at every block, so the
  # threads engine's pool threads take no turns there; before 3.3 they do,
  # with a spent slice passing after every request.
  def test_a_pool_thread_takes_turns_only_where_ruby_does_not_hand_the_gvl_over
    assert_equal Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.3"), Turns::HANDS_OVER
    turns = Turns.for_pool(0)
    passes = counting_passes { 3.times { turns.served } }
    expected = Turns::HANDS_OVER ? 0 : 3
    assert_equal expected, passes
  end

  def test_passes_only_once_its_slice_is_spent
    turns = Turns.new(3600) # an hour: never spent during this test
    passes = counting_passes { 100.times { turns.served } }
    assert_equal 0, passes

    turns = Turns.new(0)
    passes = counting_passes { 3.times { turns.served } }
    assert_equal 3, passes, "a spent slice passes after every request"
  end

  # An early end of a turn (hybrid's loops, at a client's second request in
  # a turn) passes only once the turn is old enough.
  def test_passes_early_only_after_the_shortest_turn
    turns = Turns.new(3600)
    assert_equal 0, counting_passes { refute turns.pass_after(3600) }
    assert_equal 1, counting_passes { assert turns.pass_after(0) }
  end

  # A slice is CPU time: time spent off the CPU (waiting for the GVL, for a
  # database) is not serving, so it does not spend the slice. The tracer is
  # on before the slice starts: turning it on walks the heap, and in the
  # whole suite's heap that took more than the slice (failures seen on Ruby
  # 3.1 and 3.3). GC is off for the same reason.
  def test_a_cpu_clock_counts_only_the_threads_own_running
    turns = nil
    asleep = counting_passes do
      without_gc do
        turns = Turns.new(0.02)
        sleep 0.05 # the time off the CPU under test, not a wait for anything
        turns.served
      end
    end
    assert_equal 0, asleep, "50 ms asleep spent none of a 20 ms slice"

    burned = counting_passes do
      burn_cpu(0.03)
      turns.served
    end
    assert_equal 1, burned, "30 ms of CPU spent it"
  end

  # A thread that was off the CPU for its whole wall-time slice owes the
  # CPU slice still: the CPU clock (a syscall) is read once, not again after
  # each of the next requests.
  def test_reads_the_cpu_clock_once_while_the_cpu_slice_is_owed
    calls = counting_calls do
      without_gc do
        turns = Turns.new(0.02) # reads both clocks
        sleep 0.05 # off the CPU: the wall-time slice spent, the CPU one not
        10.times { turns.served }
      end
    end
    assert_equal 0, calls[:pass]
    assert_equal 2 + 10 + 1, calls[:clock_gettime], "each request reads the wall clock; only the first the CPU clock"
  end

  private

  # Runs on the CPU until this thread has used seconds of it (10 s at most).
  def burn_cpu(seconds)
    until_cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) + seconds
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    x = 0
    x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) < until_cpu &&
                 Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    x
  end

  def without_gc
    was_off = GC.disable
    yield
  ensure
    GC.enable unless was_off
  end
end
