# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/systemd_helpers"

# sd_notify against a real NOTIFY_SOCKET: what a Type=notify unit's systemd
# would read, and from which pid (the kernel's credentials, as systemd checks
# them), through boot, a phased restart, a hot restart and a stop.
class SystemdNotifyTest < SpindleIntegrationTest
  include SystemdHelpers

  def teardown
    close_notify_sockets
  end

  # The process that handed over; its successor keeps the output pipes open,
  # so its exit is waited for, not the end of its output.
  def old_exit_status(process)
    wait_until("the previous process exits") { !process.alive? }
    process.status.exitstatus
  end

  def start(*args, notify:, env: {})
    spawn_server("-b", LOOPBACK, *args, app_path("systemd"), env: notify.env.merge(env))
  end

  def test_single_process_ready_restart_and_stop
    notify = notify_socket
    process = start("--engine", "threads", notify: notify)
    ready = notify.await(READY: "1")
    assert_equal process.pid, ready.pid, notify.texts.inspect
    assert_match(/serving/, ready["STATUS"])

    process.signal(:USR2)
    reloading = notify.await(RELOADING: "1", MONOTONIC_USEC: /\A\d+\z/)
    assert_equal process.pid, reloading.pid
    took_over = notify.await(after: notify.index_after(reloading), READY: "1", MAINPID: /\A\d+\z/)
    successor = Integer(took_over["MAINPID"])
    refute_equal process.pid, successor
    assert_equal successor, took_over.pid, "the new process names itself"
    assert_equal 0, old_exit_status(process), process.output
    assert_equal successor, app_report(process)["pid"]

    Process.kill(:TERM, successor)
    stopping = notify.await(after: notify.index_after(took_over), STOPPING: "1")
    assert_equal successor, stopping.pid
    wait_until("the new process exits") { gone?(successor) }
    refute(notify.messages.any? { |m| m["STOPPING"] && m.pid == process.pid },
           "the process that handed over must not tell systemd the service stops: #{notify.texts.inspect}")
  end

  def test_cluster_ready_once_workers_serve_then_phased_and_hot_restart_and_stop
    notify = notify_socket
    process = start("-w", "2", notify: notify)
    ready = notify.await(READY: "1")
    assert_equal process.pid, ready.pid
    assert_match(/\A2 of 2 workers serving/, ready["STATUS"])
    before = notify.messages.take_while { |m| !m.equal?(ready) }
    assert(before.any? { |m| m["STATUS"].to_s.match?(/booting/) }, "STATUS counts workers while they boot: #{notify.texts}")

    process.signal(:USR1)
    reloading = notify.await(after: notify.index_after(ready), RELOADING: "1", MONOTONIC_USEC: /\A\d+\z/)
    assert_match(/phased restart/, reloading["STATUS"])
    reloaded = notify.await(after: notify.index_after(reloading), READY: "1")
    assert_match(/phased restart done/, reloaded["STATUS"])

    process.signal(:USR2)
    reloading = notify.await(after: notify.index_after(reloaded), RELOADING: "1")
    assert_match(/hot restart: new master pid \d+/, reloading["STATUS"])
    took_over = notify.await(after: notify.index_after(reloading), READY: "1", MAINPID: /\A\d+\z/)
    master = Integer(took_over["MAINPID"])
    refute_equal process.pid, master
    assert_equal master, took_over.pid
    assert_equal 0, old_exit_status(process), process.output

    Process.kill(:TERM, master)
    stopping = notify.await(after: notify.index_after(took_over), STOPPING: "1")
    assert_equal master, stopping.pid
    wait_until("the new master exits") { gone?(master) }
    refute(notify.messages.any? { |m| m["STOPPING"] && m.pid == process.pid },
           "the master that handed over must not tell systemd the service stops: #{notify.texts.inspect}")
  end

  # With a drain delay the stop begins at the signal, not when the drain
  # starts: systemd hears STOPPING=1 while the workers still serve.
  %w[single cluster].each do |mode|
    define_method("test_stopping_is_sent_when_the_drain_delay_begins_#{mode}") do
      notify = notify_socket
      workers = mode == "cluster" ? ["-w", "1"] : []
      process = start(*workers, "--health-path", "/health", "--drain-delay", "60", notify: notify)
      ready = notify.await(READY: "1")
      process.signal(:TERM)
      stopping = notify.await(after: notify.index_after(ready), STOPPING: "1")
      assert_equal process.pid, stopping.pid
      assert process.wait_for_output(/drain delay/), process.output
      refute_match(/draining \(|stopping \((graceful|drain)\)/, process.output, "still in the drain delay")
      process.signal(:TERM) # the second stop: at once
      process.wait_for_exit
      assert_equal 1, notify.messages.count { |m| m["STOPPING"] }, notify.texts.inspect
    end
  end

  # "@name": a socket in the abstract namespace (no file), as systemd's own
  # NOTIFY_SOCKET often is.
  def test_abstract_namespace_socket
    notify = notify_socket(abstract: true)
    assert notify.address.start_with?("@")
    process = start(notify: notify)
    assert_equal process.pid, notify.await(READY: "1").pid
    process.stop(:TERM)
    notify.await(STOPPING: "1")
  end

  # WatchdogSec=: pings every WATCHDOG_USEC/2 from the process systemd
  # watches, and after a hot restart from the new master, which takes the
  # watchdog over (its WATCHDOG_PID would name the old one).
  def test_cluster_master_pings_the_watchdog_and_hands_it_over
    notify = notify_socket
    process = spawn_watched(["-b", LOOPBACK, "-w", "1", app_path("systemd")],
                            env: notify.env.merge("WATCHDOG_USEC" => "400000"))
    first = notify.await(WATCHDOG: "1")
    notify.await(after: notify.index_after(first), WATCHDOG: "1")
    assert(notify.messages.select { |m| m["WATCHDOG"] }.all? { |m| m.pid == process.pid }, "pings come from the master")
    assert_nil app_report(process)["env"]["WATCHDOG_PID"], "the watchdog's pid is consumed by the master"

    process.signal(:USR2)
    master = Integer(notify.await(MAINPID: /\A\d+\z/)["MAINPID"])
    wait_until("the new master pings the watchdog") do
      notify.messages.any? { |m| m["WATCHDOG"] && m.pid == master }
    end
    assert_equal 0, old_exit_status(process), process.output
    Process.kill(:TERM, master)
    wait_until("the new master exits") { gone?(master) }
  end

  def test_single_process_pings_the_watchdog
    notify = notify_socket
    process = spawn_watched(["-b", LOOPBACK, app_path("systemd")], env: notify.env.merge("WATCHDOG_USEC" => "400000"))
    first = notify.await(WATCHDOG: "1")
    assert_equal process.pid, first.pid
    notify.await(after: notify.index_after(first), WATCHDOG: "1")
  end
end
