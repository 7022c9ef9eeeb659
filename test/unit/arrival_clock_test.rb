# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "spindle/config"
require "spindle/listener"
require "spindle/engine/outbox"
require "spindle/request/timed_connection"
require_relative "../support/http_client"
require_relative "../support/waiting"

# A request's first byte is timed when the kernel received it, not when the
# server read it (ArrivalClock): the request here waits in the kernel,
# unaccepted and unread, for a made 20 ms, and its time is still the
# moment it was sent.
class ArrivalClockTest < Minitest::Test
  include Waiting

  WAIT = 0.02
  REQUEST = HttpClient.request("GET", "/")

  def setup
    skip "no kernel arrival times here" unless Spindle::ArrivalClock.available?
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 8).first
  end

  def teardown
    [@client&.socket, @server].each { |io| io.close if io && !io.closed? }
    @listener&.close
  end

  def test_the_first_unread_byte_is_timed_when_it_arrived_and_left_for_the_read
    assert stamp_listener
    sent_from, sent_by = send_and_wait

    @server = accept
    assert Spindle::ArrivalClock.stamped?(@server), "accepted sockets inherit the listener's option"
    at = Spindle::ArrivalClock.first_byte_at(@server.fileno)
    assert_operator at, :>=, sent_from
    assert_operator at, :<=, sent_by, "the kernel's time, #{WAIT}s before the peek"
    assert_equal REQUEST, @server.read_nonblock(REQUEST.bytesize), "the peek leaves the byte to read"
    assert_equal :wait, Spindle::ArrivalClock.first_byte_at(@server.fileno), "none waits now"
  end

  def test_a_timed_connection_counts_its_request_from_the_first_byte
    stamp_listener
    _, sent_by = send_and_wait

    conn = timed_connection(@server = accept)
    assert_equal :data, conn.read_nonblock
    assert_equal :complete, conn.advance
    assert_operator conn.started_at, :<=, sent_by
  end

  # Nothing waits: the peek says so, and the read is not made.
  def test_a_timed_connection_with_nothing_to_read_waits
    stamp_listener
    send_and_wait
    conn = timed_connection(@server = accept)
    conn.read_nonblock
    conn.advance
    conn.finish_request_env
    assert_equal :wait, conn.read_nonblock
    assert_nil conn.started_at
    @client.socket.close_write
    @server.wait_readable(10)
    assert_equal :eof, conn.read_nonblock, "the end of the stream is the read's to tell"
  end

  def test_without_the_listener_asking_no_time_is_told
    send_and_wait
    @server = accept
    refute Spindle::ArrivalClock.stamped?(@server)
    assert_nil Spindle::ArrivalClock.first_byte_at(@server.fileno), "a byte waits, with no time"
    conn = timed_connection(@server)
    conn.read_nonblock
    conn.advance
    assert_operator conn.started_at, :>, Process.clock_gettime(Process::CLOCK_MONOTONIC) - WAIT,
                    "it counts from the read, as before"
  end

  def test_a_unix_listener_is_not_stamped
    path = File.join(Dir.tmpdir, "spindle-arrival-#{Process.pid}.sock")
    unix = Spindle::Listener.open("unix://#{path}", backlog: 8).first
    refute Spindle::ArrivalClock.stamp(unix), "a Unix stream socket tells no times"
  ensure
    unix&.close
    File.unlink(path) if path && File.exist?(path)
  end

  private

  def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Stamps the listener, then waits for the kernel to stamp packets: it
  # turns its packet clock on a moment after the first socket asks (in a
  # deferred work item), and packets that arrive before are never stamped.
  # A probe connection sends a byte at a time until one comes stamped.
  def stamp_listener
    stamped = Spindle::ArrivalClock.stamp(@listener)
    probe = HttpClient.connect("127.0.0.1", Integer(@listener.server_port))
    server = accept
    wait_until("the kernel stamping packets", deadline: 10, interval: 0.001) do
      probe.write("x")
      server.wait_readable(10)
      at = Spindle::ArrivalClock.first_byte_at(server.fileno)
      server.read_nonblock(4096, exception: false)
      at.is_a?(Float)
    end
    stamped
  ensure
    probe&.socket&.close
    server&.close
  end

  # The request is sent, then waits WAIT in the kernel: when it was sent
  # (from, by).
  def send_and_wait
    @client = HttpClient.connect("127.0.0.1", Integer(@listener.server_port))
    from = clock
    @client.write(REQUEST)
    by = clock
    wait_until("the request waiting #{WAIT}s", deadline: 10, interval: 0.001) { clock > by + WAIT }
    [from, by]
  end

  def accept
    @listener.io.wait_readable(10)
    @listener.accept_nonblock
  end

  def timed_connection(socket)
    config = Spindle::Config.new({})
    Spindle::TimedConnection.new(socket, config, {}, Spindle::Engine::Outbox.new(socket, config))
  end
end
