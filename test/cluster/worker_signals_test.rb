# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"
require_relative "../support/drain_helpers"

# A worker takes signals the way a single process does (Signals::WORKER):
# its own table, the same queue and watcher. These are the worker's own
# outcomes, seen from outside.
class WorkerSignalsTest < SpindleIntegrationTest
  include ClusterHelpers
  include DrainHelpers

  APP = app_path("cluster")

  # A worker told to stop whose request outlives --shutdown-timeout exits
  # anyway, but the unix socket's file is the master's: the replacement and
  # the other workers go on serving on it. A worker used to unlink it, so no
  # new client could reach the server by path.
  def test_a_worker_whose_drain_runs_out_leaves_the_socket_file_to_the_master
    path = File.join(Dir.mktmpdir("spw"), "s.sock")
    app = start_cluster("--shutdown-timeout", "1", "-b", "unix://#{path}", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    worker = serving_workers.first["pid"]
    _in_flight, visit = held_request(app)

    Process.kill(:TERM, worker)
    assert app.wait_for_output(/did not finish within/), app.output
    wait_until("a replacement serving") { serving_workers.map { |w| w["pid"] } - [worker] != [] }
    visit.release
    assert File.socket?(path), "a worker removed the master's socket file:\n#{app.output}"
    over_unix = connect(app, app.binds.find { |b| b.scheme == "unix" })
    over_unix.write(request("GET", "/", [["Connection", "close"]]))
    assert_equal 200, over_unix.read_response.status
  end

  # A stop that reaches a worker while it drains to become the mold (a
  # refork) ends it: it used to become the mold anyway, and a stopping
  # master waited for that mold for ever.
  def test_a_stop_during_a_refork_ends_the_worker_that_was_to_become_the_mold
    app = start_cluster(APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    in_flight, visit = held_request(app)
    assert_equal({ "ok" => "refork" }, control("refork"))
    assert app.wait_for_output(/becomes the mold/), app.output

    app.signal(:TERM)
    assert app.wait_for_output(/stopping \(graceful\)/), app.output
    visit.release
    assert_equal 200, in_flight.read_response.status, app.output
    assert_equal 0, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus,
                 "the master should exit once its only worker drained:\n#{app.output}"
  end

  private

  def held_request(app)
    gate = rendezvous
    in_flight = connect(app, app.tcp_bind)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    [in_flight, gate.await("entered")]
  end
end
