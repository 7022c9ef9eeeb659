# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"

# Listeners: several binds at once, IPv4, IPv6, UNIX sockets, -p; the start-up
# line names the addresses actually bound.
class BindsTest < SpindleIntegrationTest
  include SystemdHelpers
  def setup
    @dir = Dir.mktmpdir("spb")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_tcp_and_unix_binds_both_answer
    socket_path = File.join(@dir, "s.sock")
    process = spawn_server("-b", LOOPBACK, "-b", "unix://#{socket_path}", app_path("all"))
    assert_equal %w[tcp unix], process.binds.map(&:scheme), process.start_line
    assert_equal socket_path, process.binds.last.path
    refute_equal 0, process.binds.first.port, "the start-up line gives the real port, not 0"

    process.binds.each do |bind|
      connection = connect(process, bind)
      connection.write(request("GET", "/via-#{bind.scheme}"))
      response = connection.read_response
      assert_equal 200, response.status, "no answer on #{bind.uri}"
      assert_equal "/via-#{bind.scheme}", JSON.parse(response.body)["path"]
    end
  end

  def test_two_tcp_binds_get_different_ports
    process = spawn_server("-b", LOOPBACK, "-b", LOOPBACK, app_path("all"))
    assert_equal 2, process.binds.size, process.start_line
    refute_equal process.binds[0].port, process.binds[1].port
    process.binds.each { |bind| assert_equal 200, send_get(process, bind).status }
  end

  def test_ipv6_loopback
    skip "no IPv6 loopback on this machine" unless ipv6_loopback?

    process = spawn_server("-b", "tcp://[::1]:0", app_path("all"))
    bind = process.binds.first
    assert_equal "::1", bind.host, process.start_line
    response = send_get(process, bind)
    assert_equal 200, response.status
    assert_equal "::1", JSON.parse(response.body)["remote_addr"]
  end

  def test_port_option
    port = free_port
    process = spawn_server("-p", port.to_s, app_path("all"))
    assert_includes process.binds.map(&:port), port, process.start_line
    connection = HttpClient.connect("127.0.0.1", port)
    @connections << connection
    connection.write(request("GET", "/via-port"))
    assert_equal 200, connection.read_response.status
  end

  def test_env_describes_the_connection
    process = spawn_server("-b", LOOPBACK, app_path("all"))
    connection = connect(process)
    connection.write(request("GET", "/where?x=1", [["Host", "example.test:8080"]]))
    echoed = JSON.parse(connection.read_response.body)
    assert_equal "127.0.0.1", echoed["remote_addr"]
    assert_equal "example.test", echoed["server_name"]
    assert_equal "8080", echoed["server_port"]
    assert_equal "http", echoed["url_scheme"]
    assert_equal "x=1", echoed["query"]
  end

  # tcp://localhost (rackup's and rails server's default host) bound only
  # the first address the resolver gave: [::1] where glibc sorts it first,
  # and curl http://127.0.0.1:3000 was refused. Both loopback addresses are
  # bound, the start-up line names each, and a hot restart (USR2, alone or
  # in a cluster) hands both sockets to the new process.
  [[], %w[-w 1]].each do |mode|
    define_method("test_localhost_is_both_loopback_addresses_across_a_hot_restart#{'_in_a_cluster' if mode.any?}") do
      skip "this machine has no ::1 on lo: localhost is 127.0.0.1 alone here" unless ipv6_loopback?

      port = free_port
      process = spawn_server(*mode, "-b", "tcp://localhost:#{port}", app_path("systemd"))
      assert_equal ["127.0.0.1", "::1"], process.binds.map(&:host).sort, process.start_line
      before = process.binds.map { |bind| app_report(process, bind)["pid"] }
      assert_equal [port], process.binds.map(&:port).uniq

      process.signal(:USR2)
      wait_until("the new process answers on both addresses") do
        process.binds.all? { |bind| !before.include?(app_report(process, bind)["pid"]) }
      end
      process.binds.each { |bind| assert_equal bind.host, app_report(process, bind)["remote_addr"] }
      wait_until("the previous process exits") { !process.alive? }
      after = process.binds.map { |bind| app_report(process, bind)["pid"] }
      assert_empty after & before
      successor = mode.any? ? parent_of(after.first) : after.first
      Process.kill(:TERM, successor)
      wait_until("the new process exits") { gone?(successor) }
    end
  end

  private

  def send_get(process, bind)
    connection = connect(process, bind)
    connection.write(request("GET", "/bind"))
    connection.read_response
  end

  def parent_of(pid)
    File.read("/proc/#{pid}/stat")[/\) \S+ (\d+)/, 1].to_i
  end

  def ipv6_loopback?
    TCPServer.new("::1", 0).close
    true
  rescue SystemCallError, SocketError
    false
  end

end
