# frozen_string_literal: true

require_relative "../support/cluster_helpers"

# A stop signal sent to the whole process group: Ctrl-C in a terminal,
# `kill -INT -PGID`, coreutils `timeout`, systemd without KillMode=mixed.
# Every worker gets it from the kernel, and the master, which got it too,
# stops the workers. The master used to forward its stop as a signal, which
# each worker took as its second stop signal: it exited at once and cut off
# the requests in flight. The master's stop is now an order over the
# worker's channel, which no worker counts as a signal; a second signal an
# operator sends still stops everything at once.
class GroupSignalTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")
  ENGINES = %w[blocking threads fibers hybrid].freeze

  ENGINES.product(%w[INT TERM]).each do |engine, signal|
    define_method("test_#{signal.downcase}_to_the_group_lets_every_request_finish_on_#{engine}") do
      app = start_cluster("--engine", engine, "-t", "2:4", APP)
      workers = both_serving
      held = hold_requests(app, engine == "blocking" ? 2 : 4) # blocking: one per worker

      Process.kill(signal, -app.pid) # as a terminal's Ctrl-C does: master and workers
      assert app.wait_for_output(/\[master\] INFO spindle: stopping \(graceful\)/), app.output
      workers_acted_on_the_masters_stop(app, workers)
      held.each { |_, visit| visit.release }

      held.each do |connection, _|
        assert_equal 200, connection.read_response.status, "#{engine}, #{signal}:\n#{app.output}"
      end
      assert_equal 0, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, app.output
      refute_match(/cut off|second stop signal|exiting at once/, app.output)
    end
  end

  # An operator's second Ctrl-C is still a second stop: every process has
  # it from the kernel, and each worker exits at once, saying what it cut off.
  def test_a_second_signal_to_the_group_stops_at_once
    app = start_cluster("--engine", "threads", "-t", "2:4", APP)
    workers = both_serving
    hold_requests(app, 2)

    Process.kill(:INT, -app.pid)
    assert app.wait_for_output(/\[master\] INFO spindle: stopping \(graceful\)/), app.output
    workers.each { |pid| assert app.wait_for_output(/ #{pid} \[worker \d\] INFO spindle: draining/), app.output }
    Process.kill(:INT, -app.pid)

    assert_equal 1, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, app.output
    assert_match(/\[master\] ERROR spindle: second stop signal: stopping \d child process\(es\) at once/, app.output)
    assert_match(/\[worker \d\] ERROR spindle: cut off \d+ request\(s\) in flight: GET \/gate/, app.output)
  end

  private

  def both_serving
    wait_until("2 workers serving") { serving_workers.size == 2 }
    serving_workers.map { |w| w["pid"] }
  end

  # count requests held inside the app; returns [connection, visit] pairs.
  def hold_requests(app, count)
    gate = rendezvous
    Array.new(count) do
      connection = connect(app, app.tcp_bind)
      connection.write(request("GET", "/gate?path=#{gate.path}"))
      [connection, gate.await("entered")]
    end
  end

  # Each worker drains (the kernel's signal) and has had the master's stop:
  # the master sent it before it answers the control socket, and a worker
  # acts on what reaches it in order, so once it has logged the HUP sent
  # after that answer, it has had the master's stop (as a signal, before the
  # fix, it was acted on by then: the worker had cut its requests off). A
  # worker holding none of the requests may have finished its drain.
  def workers_acted_on_the_masters_stop(app, workers)
    stats
    workers.each do |pid|
      assert app.wait_for_output(/ #{pid} \[worker \d\] INFO spindle: draining/), app.output
      Process.kill(:HUP, pid)
      assert app.wait_for_output(/ #{pid} \[worker \d\] INFO spindle: HUP: log files reopened|removed \(pid #{pid},/),
             app.output
    rescue Errno::ESRCH
      next
    end
  end
end
