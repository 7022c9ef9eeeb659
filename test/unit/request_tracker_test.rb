# frozen_string_literal: true

require_relative "../test_helper"
require "spindle/request/request_tracker"
require "spindle/request/handler"
require "spindle/config"
require "spindle/log"

# RequestTracker counts the same with one serving thread as with several;
# only the lock differs: a tracker for one serving thread takes none (two
# Mutex#synchronize were 3 % of a hello request's instructions), one for
# several takes it around each count.
class RequestTrackerTest < Minitest::Test
  def test_both_kinds_count_what_is_in_flight_and_what_is_served
    [true, false].each do |one_thread|
      tracker = Spindle::RequestTracker.new(one_thread: one_thread)
      first = Object.new
      second = Object.new
      tracker.start(first)
      tracker.start(second)
      assert_equal 2, tracker.in_flight, "one_thread: #{one_thread}"
      assert_equal [first, second], tracker.in_flight_connections
      assert_operator tracker.oldest_age, :>, 0

      tracker.finish(first)
      tracker.finish(second)
      assert_equal [0, 2, 2, 0], [tracker.in_flight, tracker.served, tracker.durations.count, tracker.oldest_age]
    end
  end

  def test_one_serving_thread_takes_no_lock_and_several_do
    assert_equal 0, synchronizes_per_request(Spindle::RequestTracker.new(one_thread: true))
    assert_equal 2, synchronizes_per_request(Spindle::RequestTracker.new(one_thread: false))
  end

  # The blocking and fibers engines serve on one thread; threads and hybrid
  # on several.
  def test_the_handler_takes_the_lock_only_when_several_threads_serve
    log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    [[false, 0], [true, 2]].each do |multithread, expected|
      handler = Spindle::Handler.new(->(_env) { [200, {}, []] }, Spindle::Config.new({}), log, multithread: multithread)
      assert_equal expected, synchronizes_per_request(handler.tracker), "multithread: #{multithread}"
    end
  end

  def test_queue_times_and_sheds_are_counted_for_the_metrics
    [true, false].each do |one_thread|
      tracker = Spindle::RequestTracker.new(one_thread: one_thread)
      tracker.queued(0.002)
      tracker.queued(3.0)
      tracker.shed!
      snapshot = tracker.queue_times
      assert_equal [2, 3.002, 1], [snapshot.count, snapshot.sum, tracker.shed], "one_thread: #{one_thread}"
      assert_equal [[0.005, 1], [5.0, 2]], snapshot.cumulative.values_at(0, 9)
    end
    without = Spindle::RequestTracker.new(durations: false)
    without.queued(1.0)
    assert_equal 0, without.queue_times.count, "no histogram without --metrics"
  end

  # Readers take no lock either: a reader in another thread that held one
  # would not keep a lock-free serving thread out anyway.
  def test_readers_take_no_lock
    tracker = Spindle::RequestTracker.new(one_thread: false)
    tracker.start(Object.new)
    assert_equal 0, count_synchronizes { [tracker.in_flight, tracker.in_flight_connections, tracker.oldest_age, tracker.durations] }
  end

  private

  def synchronizes_per_request(tracker)
    conn = Object.new
    count_synchronizes do
      tracker.start(conn)
      tracker.finish(conn)
    end
  end

  def count_synchronizes(&block)
    calls = 0
    trace = TracePoint.new(:c_call) { |tp| calls += 1 if tp.method_id == :synchronize && tp.defined_class == Thread::Mutex }
    trace.enable(&block)
    calls
  end
end
