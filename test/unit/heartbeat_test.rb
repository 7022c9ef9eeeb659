# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "spindle/log"
require "spindle/cluster/heartbeat"
require_relative "../support/waiting"

# A worker's channel thread, on a real SEQPACKET pair: the master's end is
# the test's. Its stop comes between two orders, never inside one.
class HeartbeatTest < Minitest::Test
  include Waiting

  Message = Spindle::Cluster::Message

  def setup
    @master, @worker = UNIXSocket.pair(:SEQPACKET)
    @log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @obeyed = Queue.new
    @gone = false
  end

  def teardown
    @heartbeat&.stop
    [@master, @worker].each(&:close)
  end

  def test_checks_in_and_obeys_each_order
    @heartbeat = start(obey: ->(order) { @obeyed << order })
    assert_kind_of Message::Checkin, Message.receive(@master)
    Message.send_to(@master, Message::RunGC.new)
    assert_kind_of Message::RunGC, take(@obeyed)
  end

  # A kill (what #stop used to be) cut the order short: the master's stop
  # order, read as the worker's drain ended, was lost.
  def test_a_stop_during_an_order_waits_for_the_order_to_be_obeyed
    entered = Queue.new
    release = Queue.new
    @heartbeat = start(obey: lambda { |order|
      entered << true
      release.pop
      @obeyed << order
    })
    Message.send_to(@master, Message::Stop.new(how: :timed))
    take(entered)
    stopping = Thread.new { @heartbeat.stop }
    release << true
    stopping.join(DEADLINE) or flunk("stop did not return")
    @heartbeat = nil
    assert_equal Message::Stop.new(how: :timed), @obeyed.pop(true)
  end

  # An order that comes with the stop is not read: it stays in the channel
  # for whoever reads next (the mold).
  def test_an_order_not_read_when_it_stops_stays_in_the_channel
    in_checkin = Queue.new
    go_on = Queue.new
    checkins = 0
    checkin = lambda do
      checkins += 1
      if checkins == 2
        in_checkin << true
        go_on.pop
      end
      Message::Checkin.new(pid: Process.pid)
    end
    @heartbeat = start(checkin: checkin, obey: ->(order) { @obeyed << order }, interval: 0.01)
    take(in_checkin)
    Message.send_to(@master, Message::Stop.new(how: :timed))
    stopping = Thread.new { @heartbeat.stop }
    wait_until("the stop asked for") { stopping.status == "sleep" }
    go_on << true
    stopping.join(DEADLINE) or flunk("stop did not return")
    @heartbeat = nil
    assert_empty @obeyed
    assert_equal Message::Stop.new(how: :timed), Message.receive(@worker)
  end

  def test_a_master_gone_is_told
    @master.close
    @heartbeat = start(obey: ->(order) { @obeyed << order })
    wait_until("the master's absence seen") { @gone }
  end

  private

  # Queue#pop's timeout is Ruby 3.2's.
  def take(queue)
    wait_until("an item in the queue", interval: 0.001) { !queue.empty? }
    queue.pop
  end

  def start(obey:, checkin: -> { Message::Checkin.new(pid: Process.pid) }, interval: Spindle::Cluster::Heartbeat::INTERVAL)
    Spindle::Cluster::Heartbeat.new(@worker, log: @log, checkin: checkin, obey: obey,
                                             gone: -> { @gone = true }, interval: interval).start
  end
end
