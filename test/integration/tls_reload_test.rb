# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/tls_setup"

# HUP rereads an ssl:// bind's certificate and key: new handshakes present the
# new pair, in a single process and in every worker of a cluster; a bad new
# pair is logged and the old one kept.
class TlsReloadTest < SpindleIntegrationTest
  include TlsClients

  include TlsFixture

  def test_hup_reloads_the_pair_in_a_single_process
    server = spawn_tls_server("-b", @files.bind, app_path("tls"))
    port = server.tls_port
    assert_equal 2, presented_serial(port)

    @files.server_pair(3)
    server.signal(:HUP)
    server.wait_for_output(/reloaded .*cert\.pem/) or flunk "no reload line:\n#{server.output}"
    assert_equal 3, presented_serial(port)
    assert_equal 0, curl(port)[0]
  end

  def test_a_bad_new_pair_is_logged_and_the_old_one_kept
    server = spawn_tls_server("-b", @files.bind, app_path("tls"))
    port = server.tls_port
    @files.server_pair(4, key: "other-key.pem") # cert.pem now belongs to a key not in key.pem
    server.signal(:HUP)
    server.wait_for_output(/does not match the certificate.*keeping the certificate loaded before/) or
      flunk "no error line:\n#{server.output}"
    assert_equal 2, presented_serial(port)
    assert server.alive?
  end

  # Each worker is told apart by the pid the app reports on the same
  # connection as the certificate, so a worker that missed the reload
  # cannot hide behind one that did.
  def test_hup_reloads_the_pair_in_every_worker
    server = spawn_tls_server("-w", "2", "-b", @files.bind, app_path("tls"))
    port = server.tls_port
    latest = {}
    wait_until("both workers serve") { record(latest, port).size == 2 }
    assert_equal [2], latest.values.uniq

    @files.server_pair(5)
    server.signal(:HUP)
    wait_until("both workers present the new certificate") { record(latest, port).values.uniq == [5] }
    assert_equal 2, latest.size
  end

  def test_a_worker_started_after_the_files_changed_loads_them
    server = spawn_tls_server("-w", "1", "-b", @files.bind, app_path("tls"))
    port = server.tls_port
    old_pid = served_by(port).first
    @files.server_pair(6)
    Process.kill(:KILL, Integer(old_pid)) # the master forks a replacement from its own copy
    wait_until("a new worker serves") { (pids = served_by(port)).any? && !pids.include?(old_pid) }
    assert_equal 6, presented_serial(port)
  end

  private

  # Adds one new connection's pid => serial to latest; returns latest.
  def record(latest, port)
    serial, pid = serial_and_pid(port)
    latest[pid] = serial if pid
    latest
  end

  # The worker pids that answered a few new connections.
  def served_by(port)
    Array.new(6) { curl(port, "/", "-H", "Connection: close")[1][/pid=(\d+)/, 1] }.compact.uniq
  end
end
