# frozen_string_literal: true

require "test_helper"
require "socket"
require "spindle/cluster/message"

# The master's and the workers' channels, in process: a SEQPACKET socketpair.
# Issue 11, item 2: at end of stream Ruby 3.3's recvmsg_nonblock returns nil
# (3.1: an empty String), and decoding that raised ArgumentError in the
# master, which died. Both Rubies must see nil: the peer is gone.
class MessageTest < Minitest::Test
  Message = Spindle::Cluster::Message

  def setup
    @ours, @theirs = UNIXSocket.pair(:SEQPACKET)
  end

  def teardown
    [@ours, @theirs].each { |s| s.close unless s.closed? }
  end

  def test_a_message_arrives_whole
    assert Message.send_to(@theirs, Message::Booted.new(pid: 12, index: 1, generation: 3))
    assert_equal Message::Booted.new(pid: 12, index: 1, generation: 3), Message.receive_nonblock(@ours)
  end

  def test_nothing_ready_is_wait
    assert_equal :wait, Message.receive_nonblock(@ours)
  end

  def test_receive_nonblock_at_end_of_stream_is_nil
    @theirs.close
    assert_nil Message.receive_nonblock(@ours)
  end

  def test_receive_at_end_of_stream_is_nil
    @theirs.close
    assert_nil Message.receive(@ours)
  end

  # What the master's retirement of a mold relies on: queued orders first,
  # then end of stream.
  def test_messages_sent_before_a_shutdown_arrive_before_end_of_stream
    Message.send_to(@theirs, Message::RunGC.new(reason: "test"))
    @theirs.shutdown(Socket::SHUT_WR)
    assert_equal Message::RunGC.new(reason: "test"), Message.receive(@ours)
    assert_nil Message.receive(@ours)
  end

  def test_a_channel_travels_with_spawn_worker
    a, b = UNIXSocket.pair(:SEQPACKET)
    Message.send_to(@theirs, Message::SpawnWorker.new(index: 2, generation: 1, channel: b))
    b.close
    order = Message.receive(@ours)
    assert_equal [2, 1], [order.index, order.generation]
    Message.send_to(order.channel, Message::RunGC.new(reason: "through the passed fd"))
    assert_equal "through the passed fd", Message.receive_nonblock(a).reason
  ensure
    [a, b, order&.channel].compact.each { |s| s.close unless s.closed? }
  end

  def test_sending_to_a_closed_peer_is_false
    @ours.close
    refute Message.send_to(@theirs, Message::RunGC.new(reason: "nobody"))
  end
end
