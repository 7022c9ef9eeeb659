# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"

# Once a drain begins (after --drain-delay), a client that connects is
# refused at once, which a load balancer retries on another host. The
# listening sockets used to stay open until the process exited: the kernel
# completed each new connection into the backlog, nobody accepted it, and
# the exit reset it. In a cluster the master and every worker share the
# socket, so the master's stop is what stops it listening; a hot restart
# (USR2) and a rolling restart (USR1) keep it (their own tests).
class RefusedDuringDrainTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")

  %w[blocking threads fibers hybrid].each do |engine|
    define_method("test_a_single_process_refuses_new_connections_once_it_drains_on_#{engine}") do
      unix = socket_path
      app = spawn_server("--engine", engine, "-b", LOOPBACK, "-b", "unix://#{unix}", APP)
      in_flight, visit = held_request(app)
      app.signal(:TERM)
      assert app.wait_for_output(/INFO spindle: draining/), app.output
      assert_refused(app)
      assert_request_finishes(app, in_flight, visit)
    end
  end

  %w[blocking threads fibers].each do |engine|
    define_method("test_a_cluster_refuses_new_connections_once_it_stops_on_#{engine}") do
      unix = socket_path
      app = start_cluster("--engine", engine, "-b", "unix://#{unix}", APP)
      wait_until("2 workers serving") { serving_workers.size == 2 }
      in_flight, visit = held_request(app)
      app.signal(:TERM)
      assert app.wait_for_output(/\[master\] INFO spindle: stopping \(graceful\)/), app.output
      assert_refused(app)
      assert_request_finishes(app, in_flight, visit)
    end
  end

  private

  def socket_path = File.join(Dir.mktmpdir("sprd"), "s.sock")

  def held_request(app)
    gate = rendezvous
    in_flight = connect(app, app.tcp_bind)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    [in_flight, gate.await("entered")]
  end

  # Refused at connect, over TCP and by path: not accepted into a backlog
  # that is reset at exit.
  def assert_refused(app)
    assert_raises(Errno::ECONNREFUSED, "a TCP client was let in during the drain:\n#{app.output}") do
      connect(app, app.tcp_bind)
    end
    assert_raises(Errno::ECONNREFUSED, "a unix socket client was let in during the drain:\n#{app.output}") do
      connect(app, app.binds.find { |b| b.scheme == "unix" })
    end
  end

  # The drain goes on as before: the request in flight gets its response,
  # and no error is logged (a worker's accept on the stopped socket).
  def assert_request_finishes(app, in_flight, visit)
    visit.release
    assert_equal 200, in_flight.read_response.status, app.output
    assert_equal 0, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, app.output
    refute_match(/ ERROR /, app.output)
  end
end
