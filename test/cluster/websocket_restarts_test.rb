# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"
require_relative "../support/websocket_client"

# What each restart does to WebSockets an app took over (docs/DEPLOY.md,
# "WebSockets"). Once hijacked, a socket is the app's: a drain neither waits
# for it nor closes it, so it ends when the process holding it exits, or when
# the app closes it. The app is the websockets benchmark's
# (bench/apps/websockets.ru): a full hijack, each socket handed to the
# process's own reader thread, so the upgrade request ends at once, as with
# Action Cable.
class WebSocketRestartsTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = File.join(SpindleProcess::ROOT, "bench", "apps", "websockets.ru")
  SOCKETS = 6
  # Far past the test's own phase timeout (60 s): a drain that waited for the
  # sockets would fail the test instead of passing late.
  PATIENT = %w[--shutdown-timeout 600].freeze

  %w[blocking threads fibers hybrid].each do |engine|
    define_method("test_a_phased_restart_ends_each_workers_sockets_as_it_retires_it_on_#{engine}") do
      app = start_cluster("--engine", engine, *PATIENT, APP, workers: 2)
      old = workers_serving(2)
      sockets = open_sockets(app)
      app.signal(:USR1)
      assert_equal [:eof] * SOCKETS, sockets.map(&:wait_for_end), "each socket ends with its worker, no close frame"
      old.each { |pid| app.wait_for_output(/worker \d removed \(pid #{pid}, exit status 0\)/) }
      assert open_sockets(app, 1).first.open?, "the new workers take new sockets"
    end
  end

  def test_term_ends_every_socket_and_the_cluster_exits_0
    app = start_cluster(*PATIENT, APP, workers: 2)
    workers_serving(2)
    sockets = open_sockets(app)
    app.signal(:TERM)
    assert_equal [:eof] * SOCKETS, sockets.map(&:wait_for_end)
    assert app.wait_for_exit, "the master exits without waiting for the sockets"
    assert_equal 0, app.status.exitstatus, app.output
  end

  # The old master's workers serve until the new master's do, so the sockets
  # stay with them until then, then end with them.
  def test_a_hot_restart_ends_the_old_workers_sockets_once_the_new_master_serves
    app = start_cluster(*PATIENT, APP, workers: 2)
    old = workers_serving(2)
    sockets = open_sockets(app)
    app.signal(:USR2)
    assert_equal [:eof] * SOCKETS, sockets.map(&:wait_for_end)
    assert_match(/new master pid (\d+) takes over the listeners/, app.output)
    assert app.wait_for_exit, "the old master exits"
    new_master = app.output[/new master pid (\d+) takes over/, 1].to_i
    assert open_sockets(app, 1).first.open?, "the new master's workers take new sockets"
    refute_includes serving_workers.map { |w| w["pid"] }, old.first
  ensure
    Process.kill(:TERM, new_master) if new_master&.positive?
  end

  # The worker becoming the mold drains its HTTP requests only: the sockets
  # its app holds stay open in the mold, which serves nothing, so no
  # broadcast reaches them, until the mold exits (the next refork, or the
  # cluster's stop). The next generation, forked from the mold, closes the
  # copies of their descriptors it inherited: before, a worker of it kept
  # them open, and the sockets outlived the mold (here: the second refork,
  # which retires it, ended none of them).
  def test_a_refork_leaves_the_molds_sockets_open_and_unserved_until_the_mold_exits
    app = start_cluster(*PATIENT, APP, workers: 1)
    old = workers_serving(1).first
    sockets = open_sockets(app)
    assert_equal "ok", refork
    wait_until("generation 1 serving") { serving_workers.map { |w| w["generation"] } == [1] }
    assert_equal old, stats.dig("mold", "pid"), "the worker that held the sockets is the mold"
    assert sockets.all?(&:open?), "the mold keeps them open"
    assert_match(/closed #{SOCKETS} socket\(s\) the mold's app had taken over/, app.output)

    # No request reaches generation 1 before it becomes the next mold: the
    # app's registry there still holds what it inherited (the benchmark app
    # forgets it on first use), so nothing but Spindle closed the copies.
    assert_equal "ok", refork
    wait_until("generation 2 serving") { serving_workers.map { |w| w["generation"] } == [2] }
    assert_equal [:eof] * SOCKETS, sockets.map(&:wait_for_end), "they end when the mold exits"
    sent = broadcast(app)
    assert_match(/\Asent 0 from /, sent, "the new generations hold none of them")
  end

  # What to set: a before_refork hook that closes the app's sockets. They
  # get a close frame (1001, going away) and the client reconnects to the new
  # generation.
  def test_a_before_refork_hook_closes_the_sockets_with_a_close_frame
    config = File.join(Dir.mktmpdir("spindle-ws"), "spindle.rb")
    File.write(config, "before_refork { WebSockets.close_all }\n")
    app = start_cluster("-C", config, *PATIENT, APP, workers: 1)
    workers_serving(1)
    sockets = open_sockets(app)
    assert_equal "ok", refork
    assert_equal [1001] * SOCKETS, sockets.map(&:wait_for_end)
    wait_until("generation 1 serving") { serving_workers.map { |w| w["generation"] } == [1] }
    assert open_sockets(app, 1).first.open?
  end

  # An app that keeps the session in the request's thread (the loop inside
  # call) keeps that request in flight: the drain waits for it up to
  # --shutdown-timeout, then cuts it off (under QUIT, which a hot restart
  # sends the old master, it waits with no limit).
  def test_a_session_held_in_the_request_holds_the_drain_until_the_shutdown_timeout
    app = start_cluster("--engine", "threads", "--shutdown-timeout", "2", app_path("websocket"), workers: 1)
    old = workers_serving(1).first
    socket = WebSocketClient.new(app.host, app.port, "/full_hijack")
    socket.send_text("hello")
    assert_equal "echo: hello", socket.receive
    app.signal(:USR1)
    assert_equal :eof, socket.wait_for_end(deadline: 30)
    app.wait_for_output(/worker 0 removed \(pid #{old}, exit status 1\)/, deadline: 30)
    assert_match(/cut off 1 request\(s\) in flight: GET \/full_hijack/, app.output)
  end

  private

  def workers_serving(count)
    wait_until("#{count} worker(s) serving") { serving_workers.size == count }
    serving_workers.map { |w| w["pid"] }
  end

  def open_sockets(app, count = SOCKETS)
    Array.new(count) { WebSocketClient.new(app.host, app.port, "/ws") }
  end

  # One POST /broadcast: "sent N from PID" (the sockets of the process that
  # took it).
  def broadcast(app)
    connection = connect(app)
    connection.write(request("POST", "/broadcast", [["Connection", "close"]], body: ""))
    connection.read_response.body
  end

  def refork = control("refork").then { |answer| answer["ok"] ? "ok" : answer }
end
