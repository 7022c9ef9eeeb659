# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require_relative "../lib/bench"
require_relative "../lib/bench/clients/open_loop"
require_relative "../scenarios/overload"

# The overload scenario's client (Bench::OpenLoop: open_loop.c, built with
# gcc on first use), against a small real HTTP server on loopback (a
# thread per connection), answering by path as the servers under test do: a
# body by length, a chunked one, one to the close, an interim 103 first, a
# 503 that closes its connection, a connection closed mid-body, or nothing
# at all.
class OpenLoopTest < Minitest::Test
  CLOSING = %w[/to_close /shed /truncated].freeze # the server closes after these

  def setup
    @listener = TCPServer.new("127.0.0.1", 0)
    @stamps = Queue.new
    @threads = []
    @acceptor = Thread.new do
      loop { @threads << Thread.new(@listener.accept) { |s| serve(s) } }
    rescue IOError
      nil # the listener closed: the test is over
    end
  end

  def teardown
    @listener.close
    @acceptor.join(5)
    @threads.each { |t| t.kill.join(5) }
  end

  def test_every_request_of_the_schedule_is_answered_and_only_2xx_count_as_served
    %w[/length /chunked /trailers /dribble /early].each do |path|
      r = load(path, rate: 100, seconds: 0.1)
      assert_equal 10, r.offered
      assert_equal({ 200 => 10 }, r.statuses, path)
      assert_equal 10, r.ok_latencies.size
      assert_equal 10, r.ok_from_send.size
      assert_equal 0, r.timeouts + r.errors
      assert_operator r.connections_opened, :<=, 4, path # kept alive: at most max_connections
    end
  end

  def test_a_body_delimited_by_the_close_is_served_and_its_connection_replaced
    r = load("/to_close", rate: 100, seconds: 0.1)
    assert_equal({ 200 => 10 }, r.statuses)
    assert_equal 10, r.connections_opened
    assert_equal 0, r.errors
  end

  def test_a_shed_answer_counts_apart_and_its_closed_connection_is_replaced
    %w[/shed /shed_lingering].each do |path|
      r = load(path, rate: 100, seconds: 0.1)
      assert_equal({ 503 => 10 }, r.statuses, path)
      assert_equal 0, r.statuses[200] # a status never seen counts 0, as the scenario reads it
      assert_empty r.ok_latencies
      assert_equal 10, r.connections_opened, path # one per request: each 503 closed its own
      assert_nil r.last_ok
    end
  end

  def test_a_connection_closed_mid_body_is_an_error
    r = load("/truncated", rate: 100, seconds: 0.1)
    assert_equal 10, r.errors
    assert_empty r.statuses
  end

  def test_a_request_never_answered_is_a_timeout
    r = load("/silent", rate: 100, seconds: 0.05, timeout: 0.2)
    assert_equal 5, r.timeouts
    assert_empty r.statuses
  end

  def test_the_stamp_is_the_send_in_wall_clock_seconds
    before = Time.now.to_f
    load("/length", rate: 100, seconds: 0.01, stamp: true)
    stamp = Float(@stamps.pop(timeout: 5)[/\At=(\d+\.\d{6})\z/, 1])
    assert_operator stamp, :>=, before
    assert_operator stamp, :<=, Time.now.to_f
  end

  def test_bad_arguments_are_refused_with_a_message
    e = assert_raises(Bench::OpenLoop::RunError) do
      Bench::OpenLoop.new(port: @listener.addr[1], path: "/a b", rate: 100, seconds: 0.1, max_connections: 4).run
    end
    assert_match(/exited 2: open_loop: --path has a space/, e.message)
  end

  private

  def load(path, rate:, seconds:, timeout: 5, stamp: false)
    Bench::OpenLoop.new(port: @listener.addr[1], path: path, rate: rate, seconds: seconds, max_connections: 4,
               timeout: timeout, stamp: stamp).run
  end

  def serve(sock)
    sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1) # /dribble's pieces go out one by one
    while (head = read_head(sock))
      stamp = head[/^X-Request-Start: (.*)\r$/, 1] and @stamps << stamp
      path = head[/\AGET (\S+)/, 1]
      answer(sock, path)
      return if CLOSING.include?(path)
    end
  ensure
    sock.close
  end

  def answer(sock, path)
    case path
    when "/length" then sock.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
    when "/chunked" then sock.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n")
    when "/trailers" then sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA;x=y\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n")
    when "/dribble" # the head and a chunked body in pieces, split inside each delimiter
      ["HTTP/1.1 200 OK\r", "\ntransfer-encoding: chunked\r\n\r", "\n5\r", "\nhel", "lo\r\n0\r", "\n\r", "\n"].each { |piece| sock.write(piece) }
    when "/early" then sock.write("HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    when "/to_close" then sock.write("HTTP/1.1 200 OK\r\n\r\nuntil the close")
    when "/shed", "/shed_lingering" # the latter leaves the close to the client, as its header says
      sock.write("HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
    when "/truncated" then sock.write("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhel")
    when "/silent" then loop { sleep 1 } # killed at teardown
    end
  end

  def read_head(sock)
    head = +""
    head << (sock.gets || return) until head.end_with?("\r\n\r\n")
    head
  end
end

# The overload page's verdicts.
class OverloadTest < Minitest::Test
  def test_the_targets_are_judged_against_the_servers_own_figures
    f = { capacity: 1000.0, goodput: 905.0, p99: 260.0, p99_send: 240.0, unloaded_p99: 10.0, max_queue_time: 0.25 }
    c = Bench::Overload::Report.checks(f)
    assert c[:goodput]
    assert_equal 260.0, c[:bound]
    assert c[:p99]
    refute Bench::Overload::Report.checks(f.merge(goodput: 899.0))[:goodput]
    refute Bench::Overload::Report.checks(f.merge(p99: 260.5))[:p99]
    assert_nil Bench::Overload::Report.checks(f.merge(max_queue_time: nil)) # a peer: no target
  end

  # At capacity 1 core served 1,000 req/s (1 ms each); in the overload 300
  # served took 0.3 s of the 1.0 s, so 1,000 sheds took 0.7 s: 0.7 ms, 0.7
  # of a request.
  def test_a_sheds_cost_is_the_servers_cpu_left_after_the_served_ones
    overload = { server_cpu_s: 1.0, ok: 300, shed: 1000 }
    assert_in_delta 0.7, Bench::Overload.shed_cost(1.0, 1000.0, overload), 1e-9
    assert_nil Bench::Overload.shed_cost(nil, 1000.0, overload), "no CPU figure at capacity"
    assert_nil Bench::Overload.shed_cost(1.0, 1000.0, overload.merge(shed: 0)), "nothing shed"
  end
end
