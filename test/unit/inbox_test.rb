# frozen_string_literal: true

require "test_helper"
require "socket"
require "spindle/engine/inbox"
require_relative "../support/waiting"

# A hybrid loop's clients accepted by another loop: handed across threads,
# taken by the receiving loop in order, and none lost at a drain.
class InboxTest < Minitest::Test
  include Waiting

  def setup
    @inbox = Spindle::Engine::Inbox.new
    @pairs = []
  end

  def teardown
    @taker&.kill&.join
    @pairs.flatten.each { |io| io.close unless io.closed? }
  end

  def test_a_socket_handed_from_another_thread_wakes_the_taker
    got = []
    @taker = Thread.new { @inbox.each { |socket, listener| got << [socket, listener] } }
    wait_until("the taker waiting", deadline: 10, interval: 0.001) { @taker.status == "sleep" }
    a, b = socket_pair
    assert Thread.new { @inbox.hand(a, :listener_a) }.value
    wait_until("a taken", deadline: 10, interval: 0.001) { got.size == 1 }
    assert Thread.new { @inbox.hand(b, :listener_b) }.value
    wait_until("b taken", deadline: 10, interval: 0.001) { got.size == 2 }
    assert_equal [[a, :listener_a], [b, :listener_b]], got
    assert_equal 0, @inbox.size
  end

  def test_sockets_wait_in_order_until_taken
    a, b = socket_pair
    @inbox.hand(a, :l)
    @inbox.hand(b, :l)
    assert_equal 2, @inbox.size, "counted in the loop's load before it takes them"
    taken = []
    @taker = Thread.new { @inbox.each { |socket, _| taken << socket } }
    wait_until("both taken", deadline: 10, interval: 0.001) { taken.size == 2 }
    assert_equal [a, b], taken
  end

  # At a drain the loop serves what it was handed and never took; a loop
  # that hands one later keeps it (and starts it itself).
  def test_close_returns_the_untaken_and_refuses_the_rest
    a, b = socket_pair
    @inbox.hand(a, :l)
    assert_equal [[a, :l]], @inbox.close
    refute @inbox.hand(b, :l), "closed: the caller keeps the socket"
    assert_equal 0, @inbox.size
  end

  private

  def socket_pair
    UNIXSocket.pair.tap { |pair| @pairs << pair }
  end
end
