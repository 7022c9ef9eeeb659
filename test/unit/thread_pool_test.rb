# frozen_string_literal: true

require "test_helper"
require "spindle/engine/thread_pool"

# The threads engine's pool: bounded, says when it has no spare thread (the
# reactor stops accepting then), and finishes running work on shutdown.
class ThreadPoolTest < Minitest::Test
  def setup
    @started = Thread::Queue.new
    @release = Thread::Queue.new
    @pool = Spindle::Engine::ThreadPool.new(min: 0, max: 2) do |item|
      @started << item
      @release.pop
    end
  end

  def teardown
    4.times { @release << :go }
    @pool.shutdown(5)
  end

  def test_spare_until_every_thread_is_busy
    assert @pool.spare?
    @pool << 1
    assert_equal 1, @started.pop
    assert @pool.spare?, "one of two threads is busy"
    @pool << 2
    assert_equal 2, @started.pop
    refute @pool.spare?, "both threads busy: the reactor must stop accepting"
  end

  def test_never_runs_more_than_max_at_once
    3.times { |i| @pool << i }
    2.times { @started.pop }
    assert_empty @started, "a third item must wait for a thread"
    @release << :go
    assert_includes [0, 1, 2], @started.pop
  end

  def test_spare_again_when_a_thread_frees
    freed = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 0, max: 1, on_free: -> { freed << true }) { |_| @release.pop }
    pool << :a
    @release << :go
    assert freed.pop
    assert pool.spare?
  ensure
    pool&.shutdown(5)
  end

  def test_shutdown_lets_running_work_finish
    done = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 1) { |_| @release.pop; done << :finished }
    pool << :job
    stopper = Thread.new { pool.shutdown(10) }
    @release << :go
    stopper.join
    assert_equal :finished, done.pop
    assert pool.idle?
  end

  # The threads engine keeps each thread's Turns here: one object per thread,
  # made once, the same for every item that thread runs.
  def test_each_thread_gets_its_own_context_for_every_item
    seen = Thread::Queue.new
    made = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 0, max: 2, context: -> { Object.new.tap { |o| made << o } }) do |item, context|
      seen << [item, Thread.current, context]
      @release.pop
    end
    pool << :a << :b
    first = [seen.pop, seen.pop]
    refute_same first[0][2], first[1][2], "two threads, two contexts"
    2.times { @release << :go }
    pool << :c
    item, thread, context = seen.pop
    assert_equal :c, item
    assert_same first.find { |(_, t, _)| t == thread }[2], context, "a thread keeps its context"
    assert_equal 2, made.size
  ensure
    2.times { @release << :go }
    pool&.shutdown(5)
  end
end
