# frozen_string_literal: true

require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"
require_relative "../support/tls_setup"

# Socket activation as systemd does it, through Debian's systemd-socket-activate:
# it listens, and on the first connection execs bin/spindle with the socket
# as fd 3 and LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES. Before Spindle knew the
# protocol it tried to bind the same port itself and exited "address already
# in use".
class SocketActivationTest < SpindleIntegrationTest
  include SystemdHelpers
  include TlsClients

  def teardown
    close_notify_sockets
  end

  # The connection made before the server ran is the one it answers: only
  # the inherited socket has it in its backlog.
  def first_request(process, port)
    connection = HttpClient.connect("127.0.0.1", port)
    @connections << connection
    connection.write(HttpClient.request("GET", "/", [["Connection", "close"]]))
    response = connection.read_response
    process.wait_for_start
    assert_equal 200, response.status, process.output
    JSON.parse(response.body)
  end

  def test_serves_on_the_inherited_tcp_socket_and_unsets_the_variables
    port = free_port
    process = socket_activate(["127.0.0.1:#{port}"], ["-b", "tcp://127.0.0.1:#{port}", app_path("systemd")])
    report = first_request(process, port)
    assert_equal "tcp://127.0.0.1:#{port}", process.binds.first.uri
    assert_equal process.pid, report["pid"]
    assert_nil report["env"]["LISTEN_FDS"], "the app (and any child) must not see LISTEN_FDS"
    assert_nil report["env"]["LISTEN_PID"]
    assert_equal 0, process.stop(:TERM)&.exitstatus, process.output
  end

  # --fdname names the socket (FileDescriptorName= in a .socket unit); a bind
  # with ?fdname= takes it by name, in a cluster whose workers share it.
  def test_a_named_socket_taken_by_name_in_a_cluster
    port = free_port
    notify = notify_socket
    process = socket_activate(["127.0.0.1:#{port}"],
                              ["-w", "2", "-b", "tcp://127.0.0.1:#{port}?fdname=web", app_path("systemd")],
                              fdnames: "web", env: notify.env)
    report = first_request(process, port)
    refute_equal process.pid, report["pid"], "a worker answers"
    assert_nil report["env"]["LISTEN_FDNAMES"]
    assert_equal process.pid, notify.await(READY: "1").pid

    process.signal(:USR2) # the new master gets the socket across exec, as any listener
    master = Integer(notify.await(MAINPID: /\A\d+\z/)["MAINPID"])
    wait_until("a worker of the new master answers") { master_of(app_report(process)["pid"]) == master }
    Process.kill(:TERM, master)
    wait_until("the new master exits") { gone?(master) }
  end

  # A UNIX socket systemd made is systemd's: Spindle serves it and leaves
  # the file in place when it stops (systemd keeps listening on it), also
  # after a USR2 successor, which got the socket across exec, stops.
  def test_unix_socket_file_stays_with_systemd
    path = File.join(Dir.mktmpdir("spa"), "web.sock")
    port = free_port
    process = socket_activate([path, "127.0.0.1:#{port}"],
                              ["-b", "unix://#{path}", "-b", "tcp://127.0.0.1:#{port}", app_path("systemd")],
                              fdnames: "sock:web")
    first_request(process, port)
    assert_equal ["unix://#{path}", "tcp://127.0.0.1:#{port}"], process.binds.map(&:uri)
    assert_equal process.pid, app_report(process, process.binds.first)["pid"]

    process.signal(:USR2)
    successor = wait_until("the successor answers on the socket") do
      (pid = app_report(process, process.binds.first)["pid"]) != process.pid && pid
    end
    wait_until("the previous process exits") { !process.alive? }
    assert File.socket?(path), "the previous process must leave systemd's socket file"
    Process.kill(:TERM, successor)
    wait_until("the successor exits") { gone?(successor) }
    assert File.socket?(path), "the socket file belongs to systemd and must stay"
  end

  # A bind no socket matches is opened as usual, beside the inherited one.
  def test_binds_without_a_socket_are_opened
    port = free_port
    process = socket_activate(["127.0.0.1:#{port}"],
                              ["-b", "tcp://127.0.0.1:#{port}", "-b", LOOPBACK, app_path("systemd")])
    first_request(process, port)
    assert_equal process.pid, app_report(process, process.binds.last)["pid"]
  end

  # The bind's own options apply to the socket it takes: with
  # ?proxy_protocol=true the inherited socket expects a PROXY header too.
  def test_the_binds_options_apply_to_the_inherited_socket
    port = free_port
    process = socket_activate(["127.0.0.1:#{port}"],
                              ["-b", "tcp://127.0.0.1:#{port}?fdname=web&proxy_protocol=true", app_path("systemd")],
                              fdnames: "web")
    connection = HttpClient.connect("127.0.0.1", port)
    @connections << connection
    connection.write("PROXY TCP4 203.0.113.7 127.0.0.1 40000 #{port}\r\n" +
                     HttpClient.request("GET", "/", [["Connection", "close"]]))
    response = connection.read_response
    process.wait_for_start
    assert_equal 200, response.status, process.output
    assert_equal "203.0.113.7", JSON.parse(response.body)["remote_addr"]
  end

  # An ssl:// bind takes a plain TCP socket from systemd and serves TLS on it.
  def test_an_ssl_bind_serves_tls_on_the_inherited_socket
    @files = TlsFiles.new
    @files.server_pair(7)
    port = free_port
    bind = @files.bind(fdname: "web").sub("127.0.0.1:0", "127.0.0.1:#{port}")
    process = socket_activate(["127.0.0.1:#{port}"], ["-b", bind, app_path("systemd")], fdnames: "web")
    status, body, err = curl(port)
    assert_equal 0, status, "#{err}\n#{process.output}"
    assert_equal process.pid, JSON.parse(body)["pid"]
    # (SpindleProcess's start-up line parser knows no ssl:// bind; TlsProcess's is not for this command.)
    assert process.wait_for_output(%r{binds=ssl://127\.0\.0\.1:#{port}\b}), process.output
  ensure
    @files&.cleanup
  end

  def test_an_inherited_socket_no_bind_asks_for_is_an_error_naming_it
    port = free_port
    other = free_port
    process = socket_activate(["127.0.0.1:#{port}"], ["-b", "tcp://127.0.0.1:#{other}", app_path("systemd")],
                              fdnames: "web")
    trigger = HttpClient.connect("127.0.0.1", port)
    @connections << trigger
    assert_equal 2, process.wait_for_exit&.exitstatus, process.output
    assert_match(%r{fd 3 \(tcp://127\.0\.0\.1:#{port}, name web\), which no bind asks for}, process.stderr)
  end

  # `-l PORT` makes systemd listen on [::]:PORT; a bind of 0.0.0.0:PORT then
  # tried to open its own socket first and failed "address already in use",
  # though DEPLOY.md promises the error names the bind to add. The passed
  # socket is checked first, and the error says which bind takes it.
  def test_a_bind_on_the_sockets_port_but_another_address_is_told_which_bind_takes_it
    port = free_port
    process = socket_activate([port.to_s], ["-b", "tcp://0.0.0.0:#{port}", app_path("systemd")])
    trigger = HttpClient.connect("127.0.0.1", port)
    @connections << trigger
    assert_equal 2, process.wait_for_exit&.exitstatus, process.output
    refute_match(/already in use/, process.stderr)
    assert_includes process.stderr, "fd 3 (tcp://[::]:#{port}), which no bind asks for: -b tcp://0.0.0.0:#{port} " \
                                    "has its port on another address; bind -b tcp://[::]:#{port} instead"
  end

  # One bind, two sockets: tcp://localhost takes systemd's 127.0.0.1 and ::1
  # sockets both (they were one taken, the other "no bind asks for").
  def test_a_localhost_bind_takes_both_loopback_sockets
    skip "this machine has no ::1 on lo" unless ipv6_loopback?

    port = free_port
    process = socket_activate(["127.0.0.1:#{port}", "[::1]:#{port}"],
                              ["-b", "tcp://localhost:#{port}", app_path("systemd")])
    first_request(process, port)
    assert_equal ["tcp://127.0.0.1:#{port}", "tcp://[::1]:#{port}"], process.binds.map(&:uri)
    process.binds.each { |bind| assert_equal process.pid, app_report(process, bind)["pid"] }
  end

  def test_a_bind_naming_a_socket_systemd_did_not_pass_is_an_error
    port = free_port
    process = socket_activate(["127.0.0.1:#{port}"], ["-b", "tcp://127.0.0.1:#{port}?fdname=admin", app_path("systemd")],
                              fdnames: "web")
    trigger = HttpClient.connect("127.0.0.1", port)
    @connections << trigger
    assert_equal 2, process.wait_for_exit&.exitstatus, process.output
    assert_match(/asks for the socket named admin, and systemd passed none by that name/, process.stderr)
  end

  private

  def ipv6_loopback?
    TCPServer.new("::1", 0).close
    true
  rescue SystemCallError, SocketError
    false
  end

  def master_of(pid)
    File.read("/proc/#{pid}/stat")[/\) \S+ (\d+)/, 1].to_i
  end
end
