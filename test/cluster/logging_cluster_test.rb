# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"
require_relative "../support/log_files"

# The logs of a cluster (docs/LOGGING.md): master and worker lines carry
# their pid and role; HUP to the master reopens the files in every process
# (logrotate); workers coming and going, and a forced stop, are logged.
class LoggingClusterTest < SpindleIntegrationTest
  include ClusterHelpers
  include LogFiles

  APP = app_path("cluster")

  def setup
    @dir = Dir.mktmpdir("spindle-logging")
    @log = File.join(@dir, "server.log")
    @access = File.join(@dir, "access.log")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def start_logging_cluster(*args)
    @control = File.join(@dir, "control.sock")
    spawn_with_log_file(@log, "-w", "2", "--control", "unix://#{@control}", "-b", LOOPBACK,
                        "--access-log", @access, "--access-log-format", "json", *args, APP)
  end

  def test_master_and_worker_lines_carry_their_pid_and_role
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    workers = serving_workers.to_h { |w| ["worker #{w['index']}", w["pid"]] }
    app.stop(:TERM)
    lines = text_lines(app.output)
    assert_equal app.output.lines.size, lines.size, "every line has the fields:\n#{app.output}"
    roles = lines.map { |l| [l.role, l.pid] }.uniq.to_h
    assert_equal app.pid, roles["master"], app.output
    workers.each { |role, pid| assert_equal pid, roles[role], "#{role}'s lines:\n#{app.output}" }
    workers.each_value do |pid|
      assert(lines.any? { |l| l.role == "master" && l.message.match?(/worker \d added \(pid #{pid}, generation 0\)/) },
             "the master logs each worker it adds:\n#{app.output}")
    end
  end

  # logrotate: move both files away, HUP the master (postrotate). Every
  # process writes its next lines to the new files: the master and both
  # workers log the reopen there, and each worker's next request lands in
  # the new access log. The blocking engine makes "each worker" certain: a
  # worker held by a request accepts nothing, so the next one goes to the
  # other.
  %w[blocking threads].each do |engine|
    define_method(:"test_hup_reopens_the_log_files_in_master_and_workers_#{engine}") do
      app = start_logging_cluster("--engine", engine)
      wait_until("2 workers serving") { serving_workers.size == 2 }
      pids = serving_workers.to_h { |w| [w["pid"], "worker #{w['index']}"] }.merge(app.pid => "master")
      File.rename(@log, "#{@log}.1")
      File.rename(@access, "#{@access}.1")
      app.signal(:HUP)
      wait_until("every process logged its reopen in the new file") do
        text_lines(read_log(@log)).select { |l| l.message.include?("HUP: log files reopened") }
                                  .to_h { |l| [l.pid, l.role] } == pids
      end
      served = engine == "blocking" ? one_request_per_worker(app) : [get_json(app, "/")[1]["pid"]]
      wait_until("the requests in the new access log") { json_lines(@access).size == served.size }
      assert_equal served.sort, json_lines(@access).map { |l| l["pid"] }.sort
      assert_equal served.map { |pid| pids[pid] }.sort, json_lines(@access).map { |l| l["role"] }.sort
      assert_empty read_log("#{@access}.1"), "no request was served before the rotation"
      assert_match(/\[master\] INFO spindle \S+ engine=#{engine}/, read_log("#{@log}.1"))
    end
  end

  def test_workers_added_and_removed_are_logged_with_their_exit_status
    app = start_cluster(APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    killed = serving_workers.find { |w| w["index"] == 0 }["pid"]
    Process.kill(:KILL, killed)
    assert app.wait_for_output(/\[master\] ERROR spindle: worker 0 \(pid #{killed}\) died: killed by signal KILL/),
           app.output
    assert app.wait_for_output(/\[master\] INFO spindle: worker 0 added \(pid (?!#{killed}\b)\d+/), app.output
    wait_until("2 workers serving") { serving_workers.size == 2 }
    retired = serving_workers.find { |w| w["index"] == 1 }["pid"]
    Process.kill(:TTOU, app.pid)
    assert app.wait_for_output(/\[master\] INFO spindle: worker 1 removed \(pid #{retired}, exit status 0\)/),
           app.output
  end

  # A second TERM stops at once: the master says so, and each worker logs
  # the requests it cuts off (method and path), then the master logs them
  # gone.
  def test_a_forced_stop_logs_the_requests_each_worker_cuts_off
    app = start_cluster(APP, workers: 1)
    worker = hold_a_request(app)
    app.signal(:TERM)
    assert app.wait_for_output(/\[worker 0\] INFO spindle: draining/), app.output
    app.signal(:TERM)
    assert_forced_stop_logged(app, worker)
  end

  # During --drain-delay the workers have had no stop signal yet: the
  # forced stop still reaches them as their second one.
  def test_a_forced_stop_during_the_drain_delay_logs_the_requests_cut_off
    app = start_cluster("--health-path", "/healthz", "--drain-delay", "600", APP, workers: 1)
    worker = hold_a_request(app)
    app.signal(:TERM)
    assert app.wait_for_output(/\[master\] INFO spindle: drain delay/), app.output
    app.signal(:TERM)
    assert_forced_stop_logged(app, worker)
  end

  private

  def hold_a_request(app)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    worker = serving_workers.first["pid"]
    gate = rendezvous
    held = connect(app)
    held.write(request("GET", "/gate?path=#{gate.path}"))
    gate.await("entered")
    worker
  end

  def assert_forced_stop_logged(app, worker)
    assert_equal 1, app.wait_for_exit&.exitstatus, app.output
    lines = text_lines(app.output).map { |l| [l.pid, l.role, l.level, l.message] }
    assert_includes lines, [app.pid, "master", "ERROR", "spindle: second stop signal: stopping 1 child process(es) at once"]
    assert_includes lines, [worker, "worker 0", "ERROR", "spindle: cut off 1 request(s) in flight: GET /gate"]
    assert_includes lines, [app.pid, "master", "INFO", "spindle: worker 0 removed (pid #{worker}, exit status 1)"]
  end

  # Holds one worker with a gated request, sends a second request (which
  # only the other worker can take), then lets the first finish. Returns
  # the pids that served them.
  def one_request_per_worker(app)
    gate = rendezvous
    held = connect(app)
    held.write(request("GET", "/gate?path=#{gate.path}", [["Connection", "close"]]))
    visit = gate.await("entered")
    other = get_json(app, "/")[1]["pid"]
    visit.release
    first = JSON.parse(held.read_response.body)["pid"]
    refute_equal first, other, "the blocking engine's held worker took the second request"
    [first, other]
  end
end
