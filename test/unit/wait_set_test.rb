# frozen_string_literal: true

require "test_helper"
require "socket"
require "spindle/engine/park"
require_relative "../support/waiting"

# The epoll set the threads engine's pool threads wait on (ext/spindle/
# wait_set.c): a socket armed is reported once, to one waiter; each
# notification ends exactly one wait; a wait that finds nothing ready lets
# other threads run, and one with no timeout only looks.
class WaitSetTest < Minitest::Test
  include Waiting

  def setup
    @set = Spindle::WaitSet.new
    @client, @server = UNIXSocket.pair
  end

  def teardown
    @set.close
    @client.close
    @server.close
  end

  def test_an_armed_socket_is_reported_once_until_armed_again
    assert @set.arm(@server.fileno, 7)
    assert_nil @set.wait(0), "nothing to read yet"
    @client.write("x")
    assert_equal 7, @set.wait(5)
    assert_nil @set.wait(0), "one event per arming, though the byte is still unread"
    assert @set.arm(@server.fileno, 8)
    assert_equal 8, @set.wait(5), "armed again, under its new id"
  end

  # With no timeout the wait only looks (the look-first path, GVL held),
  # and finds what is there already.
  def test_an_event_already_there_is_taken_without_waiting
    @set.arm(@server.fileno, 9)
    @client.write("x")
    wait_until("the byte has arrived") { @server.wait_readable(0) }
    assert_equal 9, @set.wait(0)
  end

  def test_a_disarmed_socket_is_not_reported
    @set.arm(@server.fileno, 3)
    assert @set.disarm(@server.fileno)
    @client.write("x")
    assert_nil @set.wait(0)
  end

  def test_each_notification_ends_one_wait
    @set.notify(2)
    assert_equal [true, true, nil], Array.new(3) { @set.wait(0) }
  end

  def test_a_closed_socket_cannot_be_armed
    reader, writer = IO.pipe
    fd = reader.fileno
    reader.close
    writer.close
    refute @set.arm(fd, 1)
  end

  # The waiter shows as asleep only once it is inside the wait; this thread
  # can look, and then notify, only if the wait let go of the GVL.
  def test_a_wait_lets_other_threads_run
    waiter = Thread.new { @set.wait(30) }
    wait_until("the waiter is inside the wait") { waiter.status == "sleep" }
    @set.notify
    assert_equal true, waiter.join(30)&.value
  end

  def test_a_waiting_thread_can_be_killed
    waiter = Thread.new { @set.wait(30) }
    wait_until("the waiter is inside the wait") { waiter.status == "sleep" }
    waiter.kill
    assert waiter.join(30), "the wait ends for Thread#kill"
  end

  def test_ids_must_be_positive
    assert_raises(ArgumentError) { @set.arm(@server.fileno, 0) }
  end
end
