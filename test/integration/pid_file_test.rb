# frozen_string_literal: true

require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"

# --pidfile: the pid of the process to signal, written at start, rewritten by
# the new process or master after USR2 (the pid changes), removed at exit by
# the process it names and only by it.
class PidFileTest < SpindleIntegrationTest
  include SystemdHelpers

  def setup
    @dir = Dir.mktmpdir("spp")
    @path = File.join(@dir, "spindle.pid")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def recorded = File.exist?(@path) && Integer(File.read(@path))

  def start(*args)
    spawn_server("-b", LOOPBACK, "--pidfile", @path, *args, app_path("systemd"))
  end

  def test_written_at_start_and_removed_at_exit
    process = start
    assert_equal process.pid, recorded
    assert_equal ["spindle.pid"], Dir.children(@dir), "no temporary file is left beside it"
    assert_equal 0, process.stop(:TERM)&.exitstatus, process.output
    refute File.exist?(@path), "removed at exit"
  end

  def test_cluster_names_the_master_and_a_forced_stop_removes_it
    process = start("-w", "2")
    assert_equal process.pid, recorded
    process.signal(:TERM)
    process.signal(:TERM) # the second stop signal exits at once
    process.wait_for_exit
    refute File.exist?(@path), "removed by a forced stop too:\n#{process.output}"
  end

  # A pid file left by a process that is gone, or naming a live process that
  # is no Spindle (its pid was reused), is replaced.
  def test_a_stale_pid_file_is_replaced
    dead = Process.spawn("true")
    Process.wait(dead)
    File.write(@path, "#{dead}\n")
    process = start
    assert_equal process.pid, recorded
    assert_match(/pid file .* names pid #{dead}, which is gone; replacing it/, process.output)
    process.stop(:TERM)

    sleeper = Process.spawn("sleep", "60")
    File.write(@path, "#{sleeper}\n")
    process = start
    assert_equal process.pid, recorded
    assert_match(/names pid #{sleeper}, not a Spindle process; replacing it/, process.output)
  ensure
    Process.kill(:KILL, sleeper) if sleeper
    Process.wait(sleeper) if sleeper
  end

  def test_a_pid_file_naming_a_live_spindle_is_a_start_up_error
    first = start
    second = run_spindle("-b", LOOPBACK, "--pidfile", @path, app_path("systemd"))
    assert_equal 2, second.status&.exitstatus, second.output
    assert_match(/pid file #{Regexp.escape(@path)} names pid #{first.pid}, a Spindle process that is still running/,
                 second.stderr)
    assert_equal first.pid, recorded, "the running server's pid file is left alone"
  end

  def test_usr2_single_process_rewrites_it
    process = start
    process.signal(:USR2)
    successor = wait_until("the successor writes its pid") { (pid = recorded) && pid != process.pid && pid }
    wait_until("the previous process exits") { !process.alive? }
    assert_equal successor, recorded, "the previous process must not remove its successor's pid file"
    assert_equal successor, app_report(process)["pid"]
    Process.kill(:TERM, successor)
    wait_until("the successor exits and removes its pid file") { gone?(successor) && !File.exist?(@path) }
  end

  def test_usr2_cluster_new_master_rewrites_it
    process = start("-w", "1")
    process.signal(:USR2)
    master = wait_until("the new master writes its pid") { (pid = recorded) && pid != process.pid && pid }
    wait_until("the previous master exits") { !process.alive? }
    assert_equal master, recorded
    Process.kill(:TERM, master)
    wait_until("the new master exits and removes its pid file") { gone?(master) && !File.exist?(@path) }
  end
end
