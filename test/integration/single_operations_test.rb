# frozen_string_literal: true

require "json"
require "open3"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"

# The operations a cluster offers, on a process serving alone (no -w).
# --control and --worker-memory-limit used to be ignored there without a
# word, as were --worker-timeout, --refork-after and the fork hooks: the
# first two now work as Puma's control app does, the others are warned about.
class SingleOperationsTest < SpindleIntegrationTest
  include SystemdHelpers

  CTL = File.join(SpindleProcess::ROOT, "bin", "spindlectl")

  def setup
    @dir = Dir.mktmpdir("spo")
    @control = File.join(@dir, "control.sock")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_spindlectl_stats_gc_and_reopen_against_a_process_alone
    process = spawn_server("--control", "unix://#{@control}", "-b", LOOPBACK, app_path("systemd"))
    app_report(process)

    stats = ctl_json("stats")
    assert_equal "single", stats["mode"]
    assert_equal process.pid, stats["master"]["pid"]
    assert_equal [[0, process.pid, "serving"]], stats["workers"].map { |w| w.values_at("index", "pid", "state") }
    assert_operator stats["workers"].first["requests"], :>=, 1
    assert_match(/\Asingle process pid #{process.pid}  engine threads/, ctl("stats").first)

    assert_equal({ "ok" => "gc" }, ctl_json("gc"))
    assert_equal({ "ok" => "reopen" }, ctl_json("reopen"))
    assert process.wait_for_output(/HUP: log files reopened/), process.output
    out, status = ctl("phased-restart")
    assert_equal 1, status.exitstatus
    assert_match(/a phased restart needs workers \(-w N\)/, out)
  end

  # hot-restart is USR2: the new process takes the listeners and the control
  # socket over; stop is TERM.
  def test_spindlectl_hot_restart_and_stop_against_a_process_alone
    process = spawn_server("--control", "unix://#{@control}", "-b", LOOPBACK, app_path("systemd"))
    old = app_report(process)["pid"]
    assert_equal({ "ok" => "hot-restart" }, ctl_json("hot-restart"))
    successor = wait_until("the new process answers") { (pid = app_report(process)["pid"]) != old && pid }
    # (The socket file is replaced as the new process takes it over: a call
    # in that instant finds none.)
    wait_until("the new process answers spindlectl") { ctl_json("stats")&.dig("master", "pid") == successor }
    wait_until("the previous process exits") { !process.alive? }

    assert_equal({ "ok" => "stop" }, ctl_json("stop"))
    wait_until("the new process stops") { gone?(successor) }
  end

  # Over TCP, the new process of a hot restart takes the port once the old
  # one lets it go, when it starts to drain.
  def test_a_tcp_control_endpoint_alone_needs_its_token_and_moves_on_hot_restart
    port = free_port
    process = spawn_server("--control", "tcp://127.0.0.1:#{port}", "--control-token", "t", "-b", LOOPBACK,
                           app_path("systemd"))
    assert_equal process.pid, tcp_stats(port, "t").dig("master", "pid")
    out, = Open3.capture2e(CTL, "--control", "tcp://127.0.0.1:#{port}", "--token", "x", "stats")
    assert_match(/bad token/, out)

    process.signal(:USR2)
    successor = wait_until("the new process answers spindlectl") do
      pid = tcp_stats(port, "t")&.dig("master", "pid")
      pid != process.pid && pid
    end
    Process.kill(:TERM, successor)
    wait_until("the new process stops") { gone?(successor) }
  end

  # Alone, passing the limit is a hot restart of the process itself: its
  # memory comes back, and no connection is refused. (Every process is over
  # 1 MiB.)
  def test_a_process_alone_over_its_memory_limit_restarts_itself_in_place
    process = spawn_server("--worker-memory-limit", "1", "-b", LOOPBACK, app_path("systemd"))
    old = app_report(process)["pid"]
    assert process.wait_for_output(/memory \d+ MiB \(USS\) is over --worker-memory-limit 1 MiB: restarting in place/,
                                   deadline: 30), process.output
    successor = wait_until("the new process answers") { (pid = app_report(process)["pid"]) != old && pid }
    wait_until("the previous process exits") { !process.alive? }
    assert_equal 0, process.status.exitstatus, process.output
    Process.kill(:TERM, successor)
    wait_until("the new process stops") { gone?(successor) }
  end

  def test_cluster_only_options_alone_are_warned_about_once_each
    config = File.join(@dir, "spindle.rb")
    File.write(config, "before_fork { }\nafter_worker_fork { |i| }\n")
    process = spawn_server("-C", config, "--worker-timeout", "5", "--refork-after", "100", "-b", LOOPBACK,
                           app_path("systemd"))
    assert process.wait_for_output(/the after_worker_fork hook does nothing/), process.output # stderr: its own pipe
    warnings = process.output.lines.grep(/ WARN /)
    [/worker_timeout \(--worker-timeout\) does nothing without workers \(-w N\): it is how a master kills/,
     /refork_after \(--refork-after\) does nothing without workers \(-w N\)/,
     /the before_fork hook does nothing without workers \(-w N\)/,
     /the after_worker_fork hook does nothing without workers \(-w N\)/].each do |line|
      assert_equal 1, warnings.grep(line).size, "#{line.inspect} once in:\n#{process.output}"
    end
    assert_equal 4, warnings.size, process.output
  end

  def test_in_a_cluster_they_are_not_warned_about
    process = spawn_server("-w", "1", "--worker-timeout", "5", "--refork-after", "100", "-b", LOOPBACK,
                           app_path("systemd"))
    app_report(process)
    refute_match(/does nothing without workers/, process.output)
  end

  private

  def ctl(*args)
    Open3.capture2e(CTL, "--control", "unix://#{@control}", "--timeout", "10", *args)
  end

  # The report, or nil while nothing answers on the port.
  def tcp_stats(port, token)
    out, status = Open3.capture2e(CTL, "--control", "tcp://127.0.0.1:#{port}", "--token", token, "--timeout", "10",
                                  "--json", "stats")
    status.success? ? JSON.parse(out) : nil
  end

  # The answer, or nil when spindlectl reached nothing.
  def ctl_json(command)
    out, = ctl("--json", command)
    out.start_with?("spindlectl: cannot reach") ? nil : JSON.parse(out)
  end
end
