# frozen_string_literal: true

require "tmpdir"
require "fileutils"
require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"

# docs/deploy/spindle.service and spindle.socket, started the way systemd
# would start them: the socket unit's ListenStream and FileDescriptorName
# through systemd-socket-activate, the service's ExecStart arguments,
# Environment= and WorkingDirectory=, a NOTIFY_SOCKET and the watchdog its
# WatchdogSec= asks for. Only the machine's paths and the port change: the
# app directory, RuntimeDirectory= and the address become temporary ones.
# ExecReload= and a stop then do what systemctl reload and stop would.
class DeployUnitsTest < SpindleIntegrationTest
  include SystemdHelpers

  DEPLOY = File.join(SpindleProcess::ROOT, "docs", "deploy")

  # The keys of one [section] of a unit file, each with every value it has.
  def unit(name, section)
    current = nil
    File.readlines(File.join(DEPLOY, name), chomp: true).each_with_object(Hash.new { |h, k| h[k] = [] }) do |line, keys|
      next if line.strip.empty? || line.start_with?("#", ";")

      header = line[/\A\[(.+)\]\z/, 1]
      current = header if header
      key, value = line.split("=", 2)
      keys[key] << value if !header && current == section
    end
  end

  def setup
    @service = unit("spindle.service", "Service")
    @socket = unit("spindle.socket", "Socket")
    @app_dir = Dir.mktmpdir("spd-app")
    @run_dir = Dir.mktmpdir("spd-run")
    FileUtils.cp(app_path("systemd"), File.join(@app_dir, "config.ru"))
  end

  def teardown
    close_notify_sockets
    FileUtils.rm_rf([@app_dir, @run_dir])
  end

  def test_the_documented_units_start_a_notifying_cluster_on_the_socket
    assert_equal ["notify"], @service["Type"]
    assert_equal ["all"], @service["NotifyAccess"], "a new master after USR2 must be allowed to notify"
    exec_start = @service["ExecStart"].fetch(0)
    refute_match(/["'$\\]/, exec_start, "this test splits ExecStart on spaces; keep it free of quoting")

    port = free_port
    listen = @socket["ListenStream"].fetch(0)
    here = ->(text) { text.gsub(listen, "127.0.0.1:#{port}").gsub("/run/#{@service['RuntimeDirectory'].fetch(0)}", @run_dir) }
    args = here.call(exec_start).split.drop(1) # the binstub becomes this checkout's bin/spindle
    environment = @service["Environment"].to_h { |pair| pair.split("=", 2) }
    watchdog_usec = Integer(@service["WatchdogSec"].fetch(0)) * 1_000_000
    notify = notify_socket

    process = socket_activate(["127.0.0.1:#{port}"], args, fdnames: @socket["FileDescriptorName"].fetch(0),
                              chdir: @app_dir, env: environment.merge(notify.env, "WATCHDOG_USEC" => watchdog_usec))
    HttpClient.connect("127.0.0.1", port).tap { |c| @connections << c }
    process.wait_for_start
    ready = notify.await(READY: "1")
    assert_equal process.pid, ready.pid
    assert_equal process.pid, notify.await(WATCHDOG: "1").pid
    report = app_report(process)
    assert_equal "production", report["env"]["RACK_ENV"]
    assert_equal process.pid, Integer(File.read(File.join(@run_dir, "spindle.pid")))

    reload(process.pid, notify, ready)
  end

  private

  # ExecReload= with $MAINPID, then the stop systemctl stop would do.
  def reload(main_pid, notify, ready)
    signal = @service["ExecReload"].fetch(0)[/-(\w+) \$MAINPID\z/, 1]
    Process.kill(signal, main_pid)
    reloading = notify.await(after: notify.index_after(ready), RELOADING: "1")
    took_over = notify.await(after: notify.index_after(reloading), READY: "1", MAINPID: /\A\d+\z/)
    master = Integer(took_over["MAINPID"])
    wait_until("the new master's pid file") { File.read(File.join(@run_dir, "spindle.pid")).to_i == master }

    Process.kill(@service.fetch("KillSignal", ["SIGTERM"]).fetch(0).delete_prefix("SIG"), master)
    notify.await(after: notify.index_after(took_over), STOPPING: "1")
    wait_until("the new master exits and removes its pid file") do
      gone?(master) && !File.exist?(File.join(@run_dir, "spindle.pid"))
    end
  end
end
