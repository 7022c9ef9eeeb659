# frozen_string_literal: true

require "test_helper"
require "spindle/engine/thread_pool"
require "spindle/engine/reactor"
require_relative "../support/waiting"

# When the threads engine's reactor takes new connections (Reactor#accept?).
# In a cluster: while a pool thread is spare, and while no complete request
# waits for a thread. Before the second rule, a pool kept busy by the
# connections it already held (one thread serving a keep-alive client again
# and again) never let the reactor look at the listeners, and a new client
# waited in the kernel's backlog until that load stopped. A process serving
# alone accepts always: no sibling can take the connection from the backlog.
# A busy pool declines for Reactor::SIBLING_FIRST at most, then accepts for
# as long: declining until its queue emptied kept new clients in the backlog
# for up to a second when every worker was busy.
class ReactorAcceptTest < Minitest::Test
  include Waiting

  def setup
    @started = Thread::Queue.new
    @release = Thread::Queue.new
    @pool = Spindle::Engine::ThreadPool.new(min: 1, max: 1) do |item|
      @started << item
      @release.pop
    end
    @reactor = reactor(alone: false)
  end

  def teardown
    3.times { @release << :go }
    @pool.shutdown(5)
  end

  def test_accepts_while_a_thread_is_spare
    assert @reactor.accept?
  end

  def test_accepts_while_every_thread_is_busy_and_nothing_waits_for_one
    @pool << :served_again_and_again
    @started.pop
    refute @pool.spare?
    assert @reactor.accept?, "a busy pool with no queue must not keep new clients in the backlog"
  end

  def test_stops_accepting_while_a_complete_request_waits_for_a_thread
    @pool << :busy
    @started.pop
    @pool << :waiting
    refute @reactor.accept?, "new clients wait in the backlog, where another process can take them"
  end

  def test_a_busy_pool_declines_for_a_while_then_takes_what_siblings_left
    @pool << :busy
    @started.pop
    @pool << :waiting
    refute @reactor.accept?
    # SIBLING_FIRST is 10 ms: asked every millisecond, each phase is seen.
    wait_until("a busy process takes what siblings left", deadline: 5, interval: 0.001) { @reactor.accept? }
    wait_until("then it declines again, so siblings go first", deadline: 5, interval: 0.001) { !@reactor.accept? }
  end

  def test_a_process_alone_accepts_while_complete_requests_wait
    @pool << :busy
    @started.pop
    @pool << :waiting
    assert reactor(alone: true).accept?, "no sibling can take the connection from the backlog"
  end

  private

  def reactor(alone:) = Spindle::Engine::Reactor.new(nil, nil, nil, @pool, nil, alone: alone)
end
