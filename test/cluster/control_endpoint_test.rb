# frozen_string_literal: true

require "open3"
require_relative "../support/cluster_helpers"

# The control endpoint of a real master: spindlectl's timeout, and the socket
# path checks at startup (a live socket is never taken over; a bad endpoint is
# one line on stderr, not a backtrace).
class ControlEndpointTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")
  CTL = File.join(SpindleProcess::ROOT, "bin", "spindlectl")
  BACKTRACE = /\.rb:\d+:in /

  def test_spindlectl_gives_up_at_its_timeout_when_the_master_does_not_answer
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    app.signal(:STOP) # the kernel still queues connections; nobody answers them
    out, status = Open3.capture2e(CTL, "--control", "unix://#{@control}", "--timeout", "0.5", "stats")
    assert_equal 1, status.exitstatus, out
    assert_equal "spindlectl: no answer from unix://#{@control} within 0.5s " \
                 "(is the master stopped or overloaded?)\n", out
  ensure
    app&.signal(:CONT)
  end

  def test_spindlectl_refuses_a_bad_timeout
    out, status = Open3.capture2e(CTL, "--control", "unix:///nowhere.sock", "--timeout", "0", "stats")
    assert_equal 2, status.exitstatus, out
    assert_equal "spindlectl: invalid argument: --timeout 0.0: must be above 0\n", out
  end

  def test_the_control_socket_does_not_replace_the_apps_socket
    sock = File.join(Dir.mktmpdir("spindle-control"), "x.sock")
    process = run_spindle("-w", "1", "-b", "unix://#{sock}", "--control", "unix://#{sock}", APP)
    refute process.status&.success?
    assert_match(%r{^spindle: control endpoint unix://#{sock}: address already in use$}, process.output)
    refute_match BACKTRACE, process.output
  end

  def test_a_second_master_does_not_take_over_a_live_control_socket
    start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    second = run_spindle("-w", "1", "--control", "unix://#{@control}", "-b", LOOPBACK, APP)
    refute second.status&.success?
    assert_match(%r{^spindle: control endpoint unix://#{@control}: address already in use$}, second.output)
    assert_equal 1, stats["totals"]["workers"], "the first master still answers on its socket"
  end

  def test_a_stale_control_socket_left_by_a_dead_master_is_replaced
    @control = File.join(Dir.mktmpdir("spindle-control"), "control.sock")
    UNIXServer.new(@control).close # the file a killed master leaves: nobody answers on it
    spawn_server("-w", "1", "--control", "unix://#{@control}", "-b", LOOPBACK, APP)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    assert_equal 0o600, File.stat(@control).mode & 0o777, "a socket of its own, not the stale file"
  end

  def test_a_control_socket_in_a_missing_directory_is_one_clear_line
    dir = Dir.mktmpdir("spindle-control")
    uri = "unix://#{dir}/missing/control.sock"
    process = run_spindle("-w", "1", "--control", uri, "-b", LOOPBACK, APP)
    refute process.status&.success?
    assert_match(/^spindle: control endpoint #{uri}: cannot listen: No such file or directory$/, process.output)
    refute_match BACKTRACE, process.output
  end

  def test_a_control_endpoint_on_the_apps_port_is_one_clear_line
    port = free_port
    process = run_spindle("-w", "1", "-b", "tcp://127.0.0.1:#{port}", "--control", "tcp://127.0.0.1:#{port}",
                          "--control-token", "t", APP)
    refute process.status&.success?
    assert_match(%r{^spindle: control endpoint tcp://127.0.0.1:#{port}: address already in use$}, process.output)
    refute_match BACKTRACE, process.output
  end

  # 1,000 silent clients kept spindlectl stats unanswered for 92 s: the
  # accept thread gave each refused one 0.1 s in turn. spindlectl, which
  # gives up at its --timeout, is answered while 200 of them hold
  # connections, over a unix socket and over TCP.
  def test_spindlectl_is_answered_while_200_silent_clients_hold_connections
    start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    silent = Array.new(200) { UNIXSocket.new(@control) }
    out, status = Open3.capture2e(CTL, "--control", "unix://#{@control}", "--timeout", "10", "stats")
    assert_equal 0, status.exitstatus, out
    assert_match(/^master pid \d+/, out)
  ensure
    silent&.each(&:close)
  end

  def test_spindlectl_is_answered_over_tcp_while_200_silent_clients_hold_connections
    port = free_port
    spawn_server("-w", "1", "--control", "tcp://127.0.0.1:#{port}", "--control-token", "t", "-b", LOOPBACK, APP)
    silent = Array.new(200) { TCPSocket.new("127.0.0.1", port) }
    out, status = Open3.capture2e(CTL, "--control", "tcp://127.0.0.1:#{port}", "--token", "t", "--timeout", "10",
                                  "--json", "stats")
    assert_equal 0, status.exitstatus, out
    assert JSON.parse(out).key?("master"), out
  ensure
    silent&.each(&:close)
  end
end
