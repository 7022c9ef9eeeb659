# frozen_string_literal: true

require "fileutils"
require "open3"
require_relative "../support/cluster_helpers"

# --sidecar and --restart-file on real processes (issue 67): a small Ruby
# script as the sidecar, which writes its pid and sleeps. The rules
# themselves (back-off, TERM then KILL) are in test/unit/cluster_sidecars_test.rb.
class SidecarsAndRestartFileTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")

  def setup
    super
    @dir = Dir.mktmpdir("spindle-sidecar")
    script = File.join(@dir, "sidecar.rb")
    # The trap before the pid: a TERM that came during Ruby's boot could be
    # swallowed there (seen on 3.4), and the sidecar would wait for its KILL.
    File.write(script, <<~RUBY)
      trap(:TERM) { exit }
      File.write(File.join(ARGV[0], "pid.\#{Process.pid}"), "")
      sleep
    RUBY
    @command = "#{RbConfig.ruby} #{script} #{@dir}"
  end

  def teardown
    super
    FileUtils.rm_rf(@dir)
  end

  def started_pids = Dir[File.join(@dir, "pid.*")].map { |f| f[/\d+\z/].to_i }.sort

  def alive?(pid)
    Process.kill(0, pid)
    !File.read("/proc/#{pid}/stat").split[2].start_with?("Z")
  rescue Errno::ESRCH, Errno::ENOENT
    false
  end

  def sidecar = stats["sidecars"].first

  def running_sidecar
    wait_until("the sidecar running") { (s = sidecar)["pid"] && started_pids.include?(s["pid"]) && s }
  end

  def test_the_master_starts_restarts_and_stops_its_sidecar_and_a_phased_restart_leaves_it
    app = start_cluster("--sidecar", @command, APP, workers: 1)
    first = running_sidecar
    name = File.basename(RbConfig.ruby) # the command's first word
    assert_equal name, first["name"]
    assert_equal 0, first["restarts"]
    app.wait_for_output(/sidecar #{name} started \(pid #{first['pid']}\)/)
    table, = Open3.capture2e(File.join(SpindleProcess::ROOT, "bin", "spindlectl"), "--control", "unix://#{@control}",
                             "stats")
    assert_match(/^sidecar #{name}  pid #{first['pid']}  restarts 0  started_at \S+Z  #{Regexp.escape(@command)}$/, table)

    old_worker = serving_workers.first["pid"]
    Process.kill(:USR1, app.pid)
    wait_until("the phased restart done") { (w = serving_workers).size == 1 && w.first["pid"] != old_worker }
    assert_equal first["pid"], sidecar["pid"], "a phased restart leaves the sidecar alone"

    Process.kill(:KILL, first["pid"])
    second = wait_until("the sidecar started again") { (s = sidecar)["pid"] && s["pid"] != first["pid"] && s }
    assert_equal 1, second["restarts"]
    assert_match(/sidecar #{name} \(pid #{first['pid']}\) died: killed by signal KILL/, app.output)
    wait_until("its process started") { started_pids.include?(second["pid"]) }

    app.stop(:TERM)
    wait_until("the sidecar gone with the server") { !alive?(second["pid"]) }
    assert_match(/sidecar #{name} stopped \(pid #{second['pid']}, exit status 0\)/, app.output)
  end

  def test_touching_the_restart_file_hot_restarts_the_cluster_and_hands_the_sidecar_over
    restart = File.join(@dir, "restart.txt")
    File.write(restart, "")
    app = start_cluster("--restart-file", restart, "--sidecar", @command, APP, workers: 1)
    old = running_sidecar
    old_master = stats["master"]["pid"]
    File.utime(Time.now + 5, Time.now + 5, restart)
    app.wait_for_output(/#{Regexp.escape(restart)} changed: hot restart \(as USR2\)/)
    wait_until("the old master exits") { !app.alive? }
    report = wait_until("the new master serving with its own sidecar") do
      s = stats
      s if s["master"]["pid"] != old_master && s["sidecars"].first["pid"] && s["sidecars"].first["pid"] != old["pid"]
    end
    wait_until("its process started") { started_pids.include?(report["sidecars"].first["pid"]) }
    refute alive?(old["pid"]), "the old master stopped its sidecar"
    assert alive?(report["sidecars"].first["pid"])
  ensure
    if report
      Process.kill(:TERM, report["master"]["pid"])
      wait_until("the new master's sidecar gone") { !alive?(report["sidecars"].first["pid"]) }
    end
  end

  def test_touching_the_restart_file_hot_restarts_a_single_process
    restart = File.join(@dir, "restart.txt")
    app = spawn_server("-b", LOOPBACK, "--restart-file", restart, APP)
    old = app.start_line[/ pid=(\d+)/, 1].to_i
    File.write(restart, "") # a file that appears counts as a change
    app.wait_for_output(/#{Regexp.escape(restart)} changed: hot restart \(as USR2\)/)
    wait_until("the old process exits") { !app.alive? }
    line = app.wait_for_output(/told the previous process \(pid #{old}\) to drain/)
    successor = app.output[/\d+ \[single\] INFO spindle: serving; told the previous process/].to_i
    assert line
    assert_equal 200, ClusterHelpers.get(app, "/").status, "the new process serves the same port"
  ensure
    Process.kill(:TERM, successor) if successor&.positive?
  end

  # Alone (no -w) the process runs its sidecars from a thread, and stops
  # them with itself.
  def test_a_single_process_runs_and_stops_its_sidecar
    control = File.join(@dir, "control.sock")
    app = spawn_server("--control", "unix://#{control}", "-b", LOOPBACK, "--sidecar", @command, APP)
    @control = control
    first = running_sidecar
    Process.kill(:KILL, first["pid"])
    second = wait_until("the sidecar started again") { (s = sidecar)["pid"] && s["pid"] != first["pid"] && s }
    assert_equal 1, second["restarts"]
    wait_until("its process started") { started_pids.include?(second["pid"]) }
    app.stop(:TERM)
    wait_until("the sidecar gone with the server") { !alive?(second["pid"]) }
  end
end
