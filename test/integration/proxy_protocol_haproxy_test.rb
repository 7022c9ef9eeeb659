# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/proxy_servers"

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
