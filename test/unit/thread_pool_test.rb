# frozen_string_literal: true

require "test_helper"
require "socket"
require "spindle/engine/thread_pool"
require_relative "../support/waiting"
require "spindle/engine/park"
require "spindle/request/connection"
require "spindle/config"
require "spindle/engine/outbox"

# The threads engine's pool: bounded, says when it has no spare thread (the
# reactor stops accepting then), and finishes running work on shutdown.
class ThreadPoolTest < Minitest::Test
  include Waiting

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

  # A work that answers AGAIN gets its item back behind those queued
  # meanwhile: the pool queues it, the work never pushes (PoolWork, a
  # pipelining client's next request).
  class OnceAgain
    def initialize(gate)
      @gate = gate
      @seen = Thread::Queue.new
      @again = true
    end

    attr_reader :seen

    def call(item, _context, pool)
      @gate.pop
      @seen << [item, pool.queued]
      return unless item == :a && @again

      @again = false
      Spindle::Engine::ThreadPool::AGAIN
    end
  end

  def test_an_item_the_work_answers_again_for_goes_behind_the_queued_ones
    work = OnceAgain.new(@release)
    pool = Spindle::Engine::ThreadPool.new(min: 0, max: 1, work: work)
    pool << :a << :b
    3.times { @release << :go }
    assert_equal [[:a, 1], [:b, 1], [:a, 0]], Array.new(3) { work.seen.pop }
    wait_until("the pool idle") { pool.idle? }
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

  # With a park, a free thread waits on it: queued items still run, and a
  # parked connection whose client sends is a thread's next item.
  def test_on_a_park_runs_queued_items_and_connections_whose_client_sent
    park = Spindle::Engine::Park.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 2, wait_on: park, name: "parked pool") { |item| seen << item }
    pool << :queued
    assert_equal :queued, seen.pop
    client, server = UNIXSocket.pair
    conn = Spindle::Connection.new(server, config = Spindle::Config.new({}), {}, Spindle::Engine::Outbox.new(server, config))
    assert park.park(conn)
    client.write("GET / HTTP/1.1\r\n")
    assert_same conn, seen.pop
    pool.shutdown(30)
    assert pool.idle?
    assert_empty Thread.list.select { |t| t.name == "parked pool" && t.alive? }, "the shutdown woke the threads in the park"
  ensure
    pool&.shutdown(5)
    park&.release
    [client, server].each { |io| io&.close }
  end

  # The pool knows its wait_on only by #wait and #notify: anything that
  # answers them (here not a Park) gives its threads items, and its
  # notifications carry queued work and the shutdown.
  def test_waits_on_anything_that_answers_wait_and_notify
    handoff = Handoff.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 2, wait_on: handoff, name: "handoff pool") { |item| seen << item }
    pool << :queued
    assert_equal :queued, seen.pop
    handoff.give(:handed)
    assert_equal :handed, seen.pop
    pool.shutdown(30)
    assert_empty Thread.list.select { |t| t.name == "handoff pool" && t.alive? }, "the shutdown reached the waits"
  ensure
    pool&.shutdown(5)
  end

  # While items are queued no thread waits on the park: a parked connection
  # whose client sent joins the queue when a thread takes its next item,
  # so it goes before what is queued after (it waited a second for the
  # reactor's recall, behind everything queued meanwhile).
  def test_a_parked_connection_whose_client_sent_joins_the_queue_while_items_wait
    park = Spindle::Engine::Park.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 1, wait_on: park) do |item|
      seen << item
      @release.pop
    end
    pool << :first
    assert_equal :first, seen.pop
    pool << :queued
    client, server = UNIXSocket.pair
    parked = park_connection(park, server)
    client.write("GET / HTTP/1.1\r\n")
    @release << :go
    assert_equal :queued, seen.pop
    pool << :after
    @release << :go
    assert_same parked, seen.pop, "the parked connection joined the queue before :after was queued"
    @release << :go
    assert_equal :after, seen.pop
  ensure
    4.times { @release << :go }
    pool&.shutdown(5)
    park&.release
    [client, server].each { |io| io&.close }
  end

  # With an order (WaitOrder, under --max-queue-time) a thread gathers
  # what the park has ready before each take, the queue empty too, and the
  # order picks among it. Taken from the park one at a time, the ready
  # connections went in the kernel's order, oldest first: under overload
  # that is the queue the order is there to reorder, served just inside
  # --max-queue-time.
  def test_with_an_order_the_ready_parked_connections_are_gathered_for_it_to_pick
    park = Spindle::Engine::Park.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 1, wait_on: park, order: NewestFirst.new) do |item|
      seen << item
      @release.pop
    end
    pool << :first
    assert_equal :first, seen.pop
    pairs = Array.new(2) { UNIXSocket.pair }
    older, newer = pairs.map { |_, server| park_connection(park, server) }
    pairs.each { |client, _| client.write("GET / HTTP/1.1\r\n") }
    @release << :go
    assert_same newer, seen.pop, "the order took the newest of the two gathered"
    @release << :go
    assert_same older, seen.pop
  ensure
    3.times { @release << :go }
    pool&.shutdown(5)
    park&.release
    pairs&.flatten&.each(&:close)
  end

  # Gathered, the ready items reach no waiting thread and queue nothing
  # that makes the pool grow: the thread that gathered them takes one, and
  # another thread must take the rest meanwhile. (A Handoff, to know the
  # pool's one thread waits before :first is queued: queued earlier, it
  # would have made a second thread at once.)
  def test_gathered_items_grow_the_pool_while_its_thread_is_busy
    handoff = WatchedHandoff.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 2, wait_on: handoff, order: NewestFirst.new) do |item|
      seen << item
      @release.pop
    end
    handoff.waits.pop
    pool << :first
    assert_equal :first, seen.pop
    handoff.give(:older)
    handoff.give(:newer)
    @release << :go
    wait_until("two threads take the two, neither let go") { seen.size == 2 }
    assert_equal %i[newer older], Array.new(2) { seen.pop }.sort
  ensure
    3.times { @release << :go }
    pool&.shutdown(5)
  end

  # Nothing queues for a parked connection's request, so nothing else would
  # make the pool grow: a thread busy with one must leave another waiting.
  def test_on_a_park_grows_while_its_threads_are_busy
    park = Spindle::Engine::Park.new
    seen = Thread::Queue.new
    pool = Spindle::Engine::ThreadPool.new(min: 1, max: 2, wait_on: park) do |conn|
      seen << conn
      @release.pop if conn.equal?(@held)
    end
    pairs = Array.new(2) { UNIXSocket.pair }
    @held, other = pairs.map { |_, server| park_connection(park, server) }
    pairs[0][0].write("GET / HTTP/1.1\r\n")
    assert_same @held, seen.pop
    pairs[1][0].write("GET / HTTP/1.1\r\n")
    wait_until("a second thread takes the other connection while the first is busy") { seen.size.positive? }
    assert_same other, seen.pop
  ensure
    @release << :go
    pool&.shutdown(5)
    park&.release
    pairs&.flatten&.each(&:close)
  end

  private

  # An order that always takes the last item queued.
  class NewestFirst
    def take(waiting) = waiting.pop
  end

  # A wait_on that is not a Park: items the test gives, and the pool's
  # notifications, in the order they came.
  class Handoff
    def initialize
      @lock = Thread::Mutex.new
      @ready = Thread::ConditionVariable.new
      @items = []
    end

    def give(item) = @lock.synchronize { @items << item; @ready.signal }
    def notify(count = 1) = @lock.synchronize { count.times { @items << :notified }; @ready.broadcast }

    def wait(timeout)
      @lock.synchronize do
        @ready.wait(@lock, timeout) if @items.empty?
        @items.shift
      end
    end
  end

  # A Handoff that says when a thread waits on it for more than a look.
  class WatchedHandoff < Handoff
    attr_reader :waits

    def initialize
      super
      @waits = Thread::Queue.new
    end

    def wait(timeout)
      @waits << timeout if timeout.positive?
      super
    end
  end

  def park_connection(park, server)
    conn = Spindle::Connection.new(server, config = Spindle::Config.new({}), {}, Spindle::Engine::Outbox.new(server, config))
    assert park.park(conn)
    conn
  end
end
