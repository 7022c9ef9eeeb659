# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "tmpdir"
require "stringio"
require "spindle/log"
require "spindle/systemd/notifier"
require "spindle/systemd/watchdog"

# Systemd::Notifier against a real datagram socket, as systemd's.
class SdNotifierTest < Minitest::Test
  def setup
    @dir = Dir.mktmpdir("spn")
    @out = StringIO.new
    @log = Spindle::Log.new(out: @out, err: @out)
  end

  def teardown
    @receiver&.close
    FileUtils.rm_rf(@dir)
  end

  def listen(address)
    @receiver = Socket.new(:UNIX, :DGRAM)
    @receiver.bind(Addrinfo.unix(address))
  end

  def receive = @receiver.recv(4096)

  def test_fields_in_one_datagram_to_a_path
    path = File.join(@dir, "notify")
    listen(path)
    notifier = Spindle::Systemd::Notifier.from_env(@log, "NOTIFY_SOCKET" => path)
    notifier.ready(status: "serving", main_pid: 42)
    assert_equal "MAINPID=42\nREADY=1\nSTATUS=serving\n", receive
    notifier.reloading
    assert_match(/\ARELOADING=1\nMONOTONIC_USEC=\d+\n\z/, receive)
  end

  def test_abstract_namespace
    name = "spindle-unit-#{Process.pid}"
    listen("\0#{name}")
    Spindle::Systemd::Notifier.from_env(@log, "NOTIFY_SOCKET" => "@#{name}").stopping
    assert_equal "STOPPING=1\n", receive
  end

  def test_status_is_sent_only_when_it_changes
    path = File.join(@dir, "notify")
    listen(path)
    notifier = Spindle::Systemd::Notifier.new(path, @log)
    notifier.status("a")
    notifier.status("a")
    notifier.status("b")
    assert_equal ["STATUS=a\n", "STATUS=b\n"], [receive, receive]
    assert_nil @receiver.recv_nonblock(4096, exception: false).then { |r| r == :wait_readable ? nil : r }
  end

  # systemd gone: the server keeps serving, and says so once.
  def test_a_missing_socket_is_logged_once_and_never_raises
    notifier = Spindle::Systemd::Notifier.new(File.join(@dir, "gone"), @log)
    3.times { notifier.watchdog }
    assert_equal 1, @out.string.scan("cannot notify systemd").size, @out.string
  end

  def test_no_notify_socket_means_no_notifier_and_no_watchdog
    notifier = Spindle::Systemd::Notifier.from_env(@log, {})
    refute notifier.enabled?
    assert_nil Spindle::Systemd::Watchdog.from_env(notifier, "WATCHDOG_USEC" => "1000000")
  end

  def test_watchdog_for_another_pid_is_not_ours_and_is_not_passed_on
    notifier = Spindle::Systemd::Notifier.new(File.join(@dir, "n"), @log)
    env = { "WATCHDOG_USEC" => "1000000", "WATCHDOG_PID" => (Process.pid + 1).to_s }
    assert_nil Spindle::Systemd::Watchdog.from_env(notifier, env)
    assert_empty env

    env = { "WATCHDOG_USEC" => "1000000", "WATCHDOG_PID" => Process.pid.to_s }
    assert_in_delta 0.5, Spindle::Systemd::Watchdog.from_env(notifier, env).interval
    assert_equal({ "WATCHDOG_USEC" => "1000000" }, env, "a USR2 successor inherits the watchdog without a pid")
  end
end
