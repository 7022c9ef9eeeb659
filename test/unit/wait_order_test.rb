# frozen_string_literal: true

require "test_helper"
require "spindle/engine/wait_order"
require "spindle/engine/thread_pool"

# --max-queue-time's order (WaitOrder): first in, first out while the oldest
# waiting request is younger than half the limit; newest first once it is
# older (the queue stands); and the oldest again once it is past the limit,
# so that the shedding step answers it at once. On the threads engine's pool
# too (ThreadPool's order:).
class WaitOrderTest < Minitest::Test
  MAX = 10.0 # --max-queue-time; the ages below sit well inside each band
  Item = Struct.new(:name, :started_at)

  def setup
    @order = Spindle::Engine::WaitOrder.new(MAX)
  end

  def test_first_in_first_out_while_the_oldest_is_younger_than_half_the_limit
    waiting = [aged(:old, 4), aged(:new, 1)]
    assert_equal :old, @order.take(waiting).name
    assert_equal [:new], waiting.map(&:name)
  end

  def test_newest_first_once_the_oldest_has_waited_half_the_limit
    waiting = [aged(:old, 6), aged(:middle, 3), aged(:new, 0)]
    assert_equal :new, @order.take(waiting).name
    assert_equal :middle, @order.take(waiting).name
    assert_equal %i[old], waiting.map(&:name)
  end

  def test_the_oldest_first_once_it_is_past_the_limit_to_be_shed
    waiting = [aged(:stale, 11), aged(:old, 6), aged(:new, 0)]
    assert_equal :stale, @order.take(waiting).name
    assert_equal :new, @order.take(waiting).name, "the queue still stands"
  end

  def test_a_request_not_yet_parsed_counts_as_new
    waiting = [Item.new(:pipelined, nil), aged(:new, 0)]
    assert_equal :pipelined, @order.take(waiting).name
  end

  def test_the_threads_engines_pool_takes_in_that_order
    started = Thread::Queue.new
    release = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 0, max: 1, order: @order) do |item|
      started << item.name
      release.pop
    end
    pool << aged(:held, 0)
    assert_equal :held, started.pop
    pool << aged(:old, 6) << aged(:middle, 3) << aged(:new, 0)
    3.times { release << :go }
    assert_equal %i[new middle old], Array.new(3) { started.pop }
  ensure
    4.times { release << :go }
    pool&.shutdown(5)
  end

  private

  def aged(name, seconds) = Item.new(name, Process.clock_gettime(Process::CLOCK_MONOTONIC) - seconds)
end
