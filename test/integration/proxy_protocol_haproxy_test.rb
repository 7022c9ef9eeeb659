# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/proxy_servers"
require_relative "../support/proxy_protocol_vectors"

# A real HAProxy in front of bin/spindle, speaking the PROXY protocol to it
# (send-proxy: v1, send-proxy-v2: v2), over TCP and over a unix socket. The
# client connects to HAProxy from 127.0.0.5; HAProxy reaches Spindle from
# 127.0.0.1 (or over the unix socket), so the app seeing 127.0.0.5 can only
# come from the header.
class ProxyProtocolHaproxyTest < SpindleIntegrationTest
  CLIENT = "127.0.0.5"

  def setup
    skip "haproxy is not installed (bin/test installs it)" unless ProxyServer.available?(HaproxyServer::BINARY)
    @socket = File.join(Dir.mktmpdir("sph"), "s.sock")
    @spindle = spawn_server("-b", "tcp://127.0.0.1:0?proxy_protocol=true", "-b", "unix://#{@socket}?proxy_protocol=true",
                            "-w", "1", app_path("all"))
  end

  def teardown
    @haproxy&.stop
  end

  def test_send_proxy_v1_over_tcp
    assert_client_seen("server s1 127.0.0.1:#{@spindle.binds.first.port} send-proxy")
  end

  def test_send_proxy_v2_over_tcp
    assert_client_seen("server s1 127.0.0.1:#{@spindle.binds.first.port} send-proxy-v2")
  end

  def test_send_proxy_v2_over_a_unix_socket
    assert_client_seen("server s1 unix@#{@socket} send-proxy-v2")
  end

  # HAProxy with no PROXY header on a PROXY bind: its request is refused,
  # unanswered, so HAProxy reports the backend failed (502), never the app's
  # answer.
  def test_a_proxy_without_the_header_is_refused
    @haproxy = start_haproxy("server s1 127.0.0.1:#{@spindle.binds.first.port}")
    response = request_via_haproxy
    assert_equal 502, response.status, "#{response}\n#{@haproxy.output}"
    assert @spindle.wait_for_output(/PROXY protocol header refused/), @spindle.output
  end

  # The whole point of the health path and the drain delay, with a real
  # balancer: HAProxy checks /healthz (over the PROXY bind: its checks send
  # a v2 LOCAL header), and on TERM marks the host down while Spindle still
  # serves, before any connection is refused.
  def test_haproxy_takes_the_host_out_during_the_drain_delay
    @spindle.kill!
    @spindle = spawn_server("-b", "tcp://127.0.0.1:0?proxy_protocol=true", "--health-path", "/healthz",
                            "--drain-delay", "600", app_path("all"))
    stats = File.join(Dir.mktmpdir("sph"), "stats.sock")
    port = @spindle.binds.first.port
    server_line = "server s1 127.0.0.1:#{port} send-proxy-v2 check check-send-proxy inter 100ms fall 2 rise 1"
    @haproxy = HaproxyServer.new do |_dir, front|
      HaproxyServer.config(front, server_line, backend: ["option httpchk GET /healthz"], stats: stats)
    end.start
    wait_until("HAProxy sees the host up") { HaproxyServer.server_status(stats)&.start_with?("UP") }
    assert_equal 200, request_via_haproxy.status

    @spindle.signal(:TERM)
    wait_until("HAProxy takes the host out") { HaproxyServer.server_status(stats)&.start_with?("DOWN") }
    direct = connect(@spindle, @spindle.binds.first)
    direct.write(ProxyProtocolVectors::VALID.fetch("v1_unknown").first +
                 request("GET", "/still-serving", [["Connection", "close"]]))
    assert_equal 200, direct.read_response.status, "the host still serves while it leaves the pool"
    assert_equal 503, request_via_haproxy.status, "HAProxy has no host left to send to"
  end

  private

  def assert_client_seen(server_line)
    @haproxy = start_haproxy(server_line)
    2.times do |i| # a second connection, and so a second header
      response = request_via_haproxy
      assert_equal 200, response.status, "#{response}\n#{@haproxy.output}\n#{@spindle.output}"
      assert_equal CLIENT, JSON.parse(response.body)["remote_addr"], "request #{i + 1}: #{response.body}"
    end
  end

  def start_haproxy(server_line)
    HaproxyServer.new { |_dir, port| HaproxyServer.config(port, server_line) }.start
  end

  def request_via_haproxy
    socket = Socket.tcp("127.0.0.1", @haproxy.port, CLIENT, 0, connect_timeout: HttpClient::DEFAULT_DEADLINE)
    connection = HttpClient::Connection.new(socket)
    @connections << connection
    connection.write(request("GET", "/via-haproxy", [["Connection", "close"]]))
    connection.read_response
  end
end
