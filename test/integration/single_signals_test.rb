# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/cluster_helpers"
require_relative "../support/drain_helpers"

# Every signal an operator of Puma or Unicorn might send to a single process
# (no -w) has a defined meaning (docs/SIGNALS.md): none ends or suspends it
# unannounced. They used to: USR1, USR2 and HUP ended it with no log line,
# TTIN suspended it (state T) and QUIT did nothing.
class SingleSignalsTest < SpindleIntegrationTest
  include ClusterHelpers
  include DrainHelpers

  def start_server(*args, env: {})
    spawn_server("-b", LOOPBACK, *args, app_path("restartable"), env: env)
  end

  %w[USR1 TTIN TTOU].each do |signal|
    define_method("test_#{signal.downcase}_is_logged_and_ignored") do
      process = start_server
      process.signal(signal)
      assert process.wait_for_output(/#{signal} ignored: /), "#{signal} should be logged:\n#{process.output}"
      assert process.alive?, "#{signal} ended the process:\n#{process.output}"
      refute_equal "T", process_state(process.pid), "#{signal} suspended the process"
      assert_still_serving(process)
    end
  end

  # WINCH keeps its default disposition, which ignores it: no log line.
  def test_winch_is_ignored
    process = start_server
    process.signal(:WINCH)
    assert_still_serving(process)
    process.signal(:USR1) # a witness: handled after WINCH was delivered
    assert process.wait_for_output(/USR1 ignored/)
    assert process.alive?
    refute_match(/WINCH/, process.output)
  end

  # HUP reopens the log files (none here: stdout and stderr stay), and says so.
  def test_hup_reopens_the_logs
    process = start_server
    process.signal(:HUP)
    assert process.wait_for_output(/HUP: log files reopened/), process.output
    assert process.alive?, process.output
    assert_still_serving(process)
  end

  # QUIT drains like TERM, but --shutdown-timeout does not apply.
  def test_quit_drains_with_no_time_limit
    process = start_server("--engine", "fibers", "--shutdown-timeout", "1")
    in_flight, visit = held_request(process)
    process.signal(:QUIT)
    assert process.wait_for_output(/draining \(no time limit\)/), process.output
    refute process.wait_for_output(/did not finish within/, deadline: 3),
           "QUIT must not impose --shutdown-timeout:\n#{process.output}"
    visit.release
    assert_equal 200, in_flight.read_response.status
    assert_equal 0, process.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, process.output
  end

  def test_a_second_stop_signal_after_quit_exits_at_once
    process = start_server("--engine", "threads")
    held_request(process) # never released
    process.signal(:QUIT)
    assert process.wait_for_output(/draining/), process.output
    process.signal(:TERM)
    status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
    assert_equal 1, status&.exitstatus, process.output
  end

  # USR2: a successor from the same command line takes over the listening
  # sockets (TCP and a unix socket's file), serves, and tells this process to
  # drain; the request in flight here finishes. No request fails throughout.
  ENGINES = %w[threads fibers].freeze
  ENGINES.each do |engine|
    define_method("test_usr2_restarts_in_place_keeping_the_listeners_on_#{engine}") do
      unix = File.join(Dir.mktmpdir("spr"), "s.sock")
      process = start_server("--engine", engine, "-b", "unix://#{unix}")
      old_pid = pid_serving(process)
      in_flight, visit = held_request(process)
      load = Load.new(process, threads: 2)

      process.signal(:USR2)
      assert process.wait_for_output(/told the previous process \(pid #{old_pid}\) to drain/), process.output
      new_pid = wait_until("the successor answers") { (pid = pid_serving(process)) != old_pid && pid }
      visit.release
      assert_equal 200, in_flight.read_response.status, process.output
      assert_equal 0, exit_status(process), process.output
      load.stop

      assert_empty load.failures, "requests failed across the restart:\n#{process.output}"
      assert_equal new_pid, pid_serving(process), "after the old process exits, its successor serves"
      assert File.socket?(unix), "the old process must not unlink the socket file its successor serves"
      over_unix = connect(process, process.binds.last)
      over_unix.write(request("GET", "/", [["Connection", "close"]]))
      assert_equal new_pid, JSON.parse(over_unix.read_response.body).fetch("pid")
      refute_app_errors(process)
    end
  end

  # A successor that cannot load the app exits; the old process says so and
  # keeps serving, and the next USR2 (app fixed) works.
  def test_usr2_with_an_app_that_fails_to_load_keeps_the_old_process_serving
    boot_dir = Dir.mktmpdir("spr")
    process = start_server(env: { "SPINDLE_TEST_BOOT_DIR" => boot_dir })
    old_pid = pid_serving(process)
    File.write(File.join(boot_dir, "fail"), "")

    process.signal(:USR2)
    assert process.wait_for_output(/restart failed: new process pid \d+ exited \(status 1\) before it served; still serving/),
           process.output
    assert_equal old_pid, pid_serving(process)

    File.delete(File.join(boot_dir, "fail"))
    process.signal(:USR2)
    assert process.wait_for_output(/told the previous process \(pid #{old_pid}\) to drain/), process.output
    assert_equal 0, exit_status(process), process.output
  end

  # One successor at a time: a USR2 while one boots starts no second one.
  def test_a_usr2_while_the_successor_boots_is_refused
    boot_dir = Dir.mktmpdir("spr")
    process = start_server(env: { "SPINDLE_TEST_BOOT_DIR" => boot_dir })
    boot = rendezvous
    File.write(File.join(boot_dir, "hold"), boot.path)

    process.signal(:USR2)
    booting = boot.await("booting")
    process.signal(:USR2)
    assert process.wait_for_output(/USR2 ignored: new process pid \d+ is still starting/), process.output
    File.delete(File.join(boot_dir, "hold"))
    booting.release
    assert_equal 0, exit_status(process), process.output
    assert_equal 1, process.output.scan("restart: new process").size, process.output
  end

  # Through rackup, USR2 reruns the command line the kernel recorded
  # (RackupRestart). It used to be logged and ignored (issue 67 changed it).
  def test_usr2_under_rackup_restarts_from_its_own_command_line
    rackup = Gem.bin_path("rackup", "rackup")
    out_r, out_w = IO.pipe
    env = { "RUBYOPT" => "#{ENV['RUBYOPT']} -I#{File.join(SpindleProcess::ROOT, 'lib')}" }
    pid = Process.spawn(env, RbConfig.ruby, rackup, "-s", "spindle", "-o", "127.0.0.1", "-p", "0",
                        app_path("restartable"), out: out_w, err: out_w, pgroup: true)
    out_w.close
    output = +""
    port = Integer(read_until(out_r, output, %r{binds=tcp://127\.0\.0\.1:(\d+)})[1])
    Process.kill(:USR2, pid)
    served = /(\d+) \[single\] INFO spindle: serving; told the previous process \(pid #{pid}\)/
    successor = Integer(read_until(out_r, output, served)[1])
    Process.wait(pid)
    connection = HttpClient.connect("127.0.0.1", port)
    connection.write(request("GET", "/", [["Connection", "close"]]))
    assert_equal successor, JSON.parse(connection.read_response.body).fetch("pid")
  ensure
    connection&.close
    Process.kill(:KILL, -pid) if pid
    Process.wait(pid) if pid && !successor
  end

  private

  def read_until(io, output, pattern)
    wait_until("#{pattern.inspect} in:\n#{output}") do
      output << io.read_nonblock(4096, exception: false).then { |d| d.is_a?(String) ? d : "" }
      output.match(pattern)
    end
  end

  # The old process's exit. Not SpindleProcess#wait_for_exit: that also waits
  # for the end of its output, which the successor holds open.
  def exit_status(process)
    wait_until("the old process exits", deadline: SpindleProcess::STOP_DEADLINE) { !process.alive? }
    process.status.exitstatus
  end

  def process_state(pid)
    File.read("/proc/#{pid}/stat")[/\) (\S)/, 1]
  rescue Errno::ENOENT
    nil
  end

  def pid_serving(process)
    response = roundtrip(request("GET", "/", [["Connection", "close"]]), process)
    assert_equal 200, response.status, response.to_s
    JSON.parse(response.body).fetch("pid")
  end

  def held_request(process)
    gate = rendezvous
    in_flight = connect(process)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    [in_flight, gate.await("entered")]
  end
end
