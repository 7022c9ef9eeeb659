# frozen_string_literal: true

require "test_helper"
require "async"
require "spindle/engine/app_gate"
require "spindle/engine/wait_order"

# --app-concurrency's AppGate on a fiber loop: at most its limit inside at
# once, the others waiting in its order; a place freed goes to a waiter, not
# to a newcomer; a waiter stopped at the gate leaves it, and one stopped
# after it was given a place passes the place on.
class AppGateTest < Minitest::Test
  Conn = Struct.new(:name, :started_at)

  def test_never_lets_more_than_its_limit_in
    most = 0
    Sync do |task|
      gate = Spindle::Engine::AppGate.new(2)
      6.times.map do |i|
        task.async do
          gate.pass(conn(i)) do
            most = [most, gate.inside].max
            task.yield # the others run meanwhile
          end
        end
      end.each(&:wait)
      assert_equal [0, 0], [gate.inside, gate.waiting]
    end
    assert_equal 2, most
  end

  def test_waiters_go_in_first_in_first_out_without_an_order
    assert_equal %i[a b c], entries(Spindle::Engine::AppGate.new(1), [conn(:a), conn(:b), conn(:c)])
  end

  def test_waiters_go_in_by_wait_order_when_shedding
    order = Spindle::Engine::WaitOrder.new(10.0)
    assert_equal %i[new old], entries(Spindle::Engine::AppGate.new(1, order), [conn(:old, 6), conn(:new, 0)])
  end

  def test_a_waiter_stopped_at_the_gate_leaves_it
    Sync do |task|
      gate = Spindle::Engine::AppGate.new(1)
      release = Async::Notification.new
      holder = task.async { gate.pass(conn(:held)) { release.wait } }
      waiter = task.async { gate.pass(conn(:stopped)) { flunk "a stopped waiter went in" } }
      task.yield until gate.waiting == 1
      waiter.stop
      assert_equal 0, gate.waiting
      release.signal
      holder.wait
      assert_equal 0, gate.inside
    end
  end

  def test_a_place_given_to_a_waiter_stopped_before_it_ran_is_passed_on
    Sync do |task|
      gate = Spindle::Engine::AppGate.new(1)
      release = Async::Notification.new
      ran = []
      holder = task.async { gate.pass(conn(:held)) { release.wait } }
      stopped = task.async { gate.pass(conn(:stopped)) { ran << :stopped } }
      after = task.async { gate.pass(conn(:after)) { ran << :after } }
      task.yield until gate.waiting == 2
      release.signal
      holder.wait # its place went to :stopped, woken at the next turn
      stopped.stop
      after.wait
      assert_equal [:after], ran
      assert_equal [0, 0], [gate.inside, gate.waiting]
    end
  end

  private

  def conn(name, age = 0) = Conn.new(name, Process.clock_gettime(Process::CLOCK_MONOTONIC) - age)

  # With one request held inside, the conns queue in this order; the order
  # they then go in.
  def entries(gate, conns)
    seen = []
    Sync do |task|
      release = Async::Notification.new
      holder = task.async { gate.pass(conn(:held)) { release.wait } }
      waiters = conns.map { |c| task.async { gate.pass(c) { seen << c.name } } }
      task.yield until gate.waiting == conns.size
      release.signal
      [holder, *waiters].each(&:wait)
    end
    seen
  end
end
