# frozen_string_literal: true

require "test_helper"
require "socket"
require "tmpdir"
require "fileutils"
require "spindle/metrics/endpoint"
require_relative "../support/waiting"

# The metrics endpoint in-process, on real sockets, with a plain lambda as
# the source of the numbers. It is not the app's server: it answers GET
# /metrics and bounds everything else (what a client sends, how long it may
# take, how many clients at once).
class MetricsEndpointTest < Minitest::Test
  include Waiting

  Endpoint = Spindle::Metrics::Endpoint
  Exchange = Spindle::Metrics::Exchange
  TEXT = "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n"
  HANG = 10 # seconds: a bound on a hang, not a timing expectation

  def setup
    @dir = Dir.mktmpdir("spindle-metrics")
    @endpoints = []
    @sockets = []
    @source = -> { TEXT }
  end

  def teardown
    @sockets.each { |s| s.close unless s.closed? }
    @endpoints.each(&:close)
    FileUtils.rm_rf(@dir)
  end

  def test_get_metrics_answers_the_exposition
    start_tcp
    status, head, body = scrape("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
    assert_equal 200, status
    assert_includes head, "content-type: text/plain; version=0.0.4; charset=utf-8\r\n"
    assert_includes head, "content-length: #{TEXT.bytesize}\r\n"
    assert_equal TEXT, body
  end

  def test_a_query_string_and_http_1_0_are_fine_and_head_has_no_body
    start_tcp
    assert_equal [200, TEXT], scrape("GET /metrics?x=1 HTTP/1.0\r\n\r\n").values_at(0, 2)
    status, head, body = scrape("HEAD /metrics HTTP/1.1\r\n\r\n")
    assert_equal [200, ""], [status, body]
    assert_includes head, "content-length: #{TEXT.bytesize}\r\n"
  end

  def test_anything_else_is_refused_with_a_status
    start_tcp
    assert_equal 404, scrape("GET / HTTP/1.1\r\n\r\n").first
    assert_equal 404, scrape("GET /metricsx HTTP/1.1\r\n\r\n").first
    assert_equal 405, scrape("POST /metrics HTTP/1.1\r\ncontent-length: 0\r\n\r\n").first
    assert_equal 400, scrape("hello\r\n\r\n").first
    assert_equal 400, scrape("GET /metrics HTTP/2.0\r\n\r\n").first
    assert_equal 200, scrape("GET /metrics HTTP/1.1\r\n\r\n").first, "and it still serves"
  end

  def test_a_head_past_the_bound_is_refused
    start_tcp(limits: limits(max_head: 512))
    status, _, body = scrape("GET /metrics HTTP/1.1\r\nX: #{'a' * 600}\r\n\r\n")
    assert_equal 431, status
    assert_match(/at most 512 bytes/, body)
  end

  def test_a_client_that_sends_nothing_is_closed_at_the_read_deadline
    start_tcp(limits: limits(read_deadline: 0.2))
    socket = connect
    status, _, body = read_response(socket)
    assert_equal 408, status
    assert_match(/within 0.2s/, body)
  end

  def test_a_silent_client_does_not_hold_up_a_scrape
    start_tcp
    connect # says nothing
    assert_equal 200, scrape("GET /metrics HTTP/1.1\r\n\r\n").first
  end

  # The cap counts scrapes being answered: scrapes whose numbers have not
  # come yet hold the places; silent clients hold none.
  def test_clients_past_the_cap_are_answered_busy_and_closed
    gate = Queue.new
    @source = -> { gate.pop }
    endpoint = start_tcp(max_clients: 2)
    held = [connect, connect]
    held.each { |socket| socket.write("GET /metrics HTTP/1.1\r\n\r\n") }
    wait_until("both held scrapes are being answered") { endpoint.instance_variable_get(:@sessions).size == 2 }
    assert_equal 503, scrape("GET /metrics HTTP/1.1\r\n\r\n").first
    2.times { gate << TEXT }
    held.each { |socket| assert_equal 200, read_response(socket).first }
    wait_until("the held scrapes' sessions ended") { endpoint.instance_variable_get(:@sessions).empty? }
    gate << TEXT
    assert_equal 200, scrape("GET /metrics HTTP/1.1\r\n\r\n").first
  end

  # A refused client's request may arrive just before the close: closing over
  # it would reset the connection and lose the 503 (up to 1 in 20 did, in bursts).
  def test_every_refused_client_reads_its_503
    gate = Queue.new
    @source = -> { gate.pop }
    endpoint = start_tcp(max_clients: 1)
    connect.write("GET /metrics HTTP/1.1\r\n\r\n")
    wait_until("the held scrape has a session") { endpoint.instance_variable_get(:@sessions).size == 1 }
    statuses = Array.new(1000) { scrape("GET /metrics HTTP/1.1\r\n\r\n").first }
    assert_equal [503], statuses.uniq
  ensure
    gate << TEXT
  end

  def test_a_scrape_is_answered_while_hundreds_of_silent_clients_are_connected
    start_tcp
    Array.new(200) { connect }
    assert_equal 200, scrape("GET /metrics HTTP/1.1\r\n\r\n").first
  end

  def test_no_numbers_in_time_is_a_503
    @source = -> {}
    start_tcp
    status, _, body = scrape("GET /metrics HTTP/1.1\r\n\r\n")
    assert_equal 503, status
    assert_match(/not available now/, body)
  end

  def test_a_unix_socket_endpoint_and_its_file
    path = File.join(@dir, "metrics.sock")
    endpoint = start("unix://#{path}")
    assert_equal "unix://#{path}", endpoint.uri
    assert_equal 200, scrape("GET /metrics HTTP/1.1\r\n\r\n", UNIXSocket.new(path)).first
    endpoint.close
    refute File.exist?(path), "close removes its own socket file"
  end

  def test_port_zero_names_the_port_the_kernel_chose
    endpoint = start_tcp
    assert_match(%r{\Atcp://127\.0\.0\.1:[1-9]\d*\z}, endpoint.uri)
    refute_equal "tcp://127.0.0.1:0", endpoint.uri
  end

  def test_an_address_in_use_is_one_clear_error
    app = TCPServer.new("127.0.0.1", 0)
    uri = "tcp://127.0.0.1:#{app.local_address.ip_port}"
    error = assert_raises(Spindle::Listener::Error) { Endpoint.new(uri, source: @source).start }
    assert_equal "metrics endpoint #{uri}: address already in use", error.message
  ensure
    app&.close
  end

  def test_a_bad_uri_is_a_config_error
    %w[http://127.0.0.1:9 tcp://127.0.0.1:70000 nonsense].each do |uri|
      assert_raises(Spindle::Config::Error, uri) { Endpoint.new(uri, source: @source) }
    end
  end

  private

  def limits(**overrides) = Exchange::Limits.new(**Exchange::LIMITS.to_h, **overrides)

  def start(uri, **options)
    endpoint = Endpoint.new(uri, source: -> { @source.call }, **options).start
    @endpoints << endpoint
    endpoint
  end

  def start_tcp(**options)
    endpoint = start("tcp://127.0.0.1:0", **options)
    @port = endpoint.io.local_address.ip_port
    endpoint
  end

  def connect
    socket = TCPSocket.new("127.0.0.1", @port)
    @sockets << socket
    socket
  end

  # Closes the connection once the response is read, as a scraper does.
  def scrape(request, socket = connect)
    socket.write(request)
    read_response(socket)
  ensure
    socket.close
  end

  # [status, head, body], once the endpoint closes the connection.
  def read_response(socket)
    data = +""
    loop do
      raise "no response within #{HANG}s" unless socket.wait_readable(HANG)

      chunk = socket.read_nonblock(65_536, exception: false)
      break if chunk.nil?

      data << chunk unless chunk == :wait_readable
    end
    head, body = data.split("\r\n\r\n", 2)
    [head[%r{\AHTTP/1\.1 (\d{3}) }, 1].to_i, "#{head}\r\n", body]
  end
end
