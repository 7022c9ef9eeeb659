# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/tls_setup"

# ssl:// binds on every engine, alone and in cluster mode, against real
# clients: curl, openssl s_client, Net::HTTP. A stalled handshake is a slow
# client (closed after --header-timeout, others served meanwhile), and plain
# HTTP sent to the TLS port closes that connection and nothing else.
class TlsEnginesTest < SpindleIntegrationTest
  include TlsClients

  ENGINES = { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.freeze
  HEADER_TIMEOUT = "2"

  include TlsFixture

  ENGINES.each do |engine, extra|
    define_method("test_real_clients_with_#{engine}") do
      server = start(engine, extra)
      port = server.tls_port
      code, body, err = curl(port, "/", "-w", "%{http_version}")
      assert_equal 0, code, "curl failed: #{err}"
      assert_match(/\Ascheme=https https=on client=none pid=\d+\n1\.1\z/, body)
      assert_tls_versions_and_alpn(port)
      net_http(port) do |http|
        3.times { assert_match(/scheme=https/, http.get("/keep-alive").body) } # one connection, kept alive
      end
    end

    define_method("test_a_stalled_handshake_is_a_slow_client_with_#{engine}") do
      server = start(engine, extra)
      assert_stalled_handshakes_closed_while_others_served(server.tls_port)
      assert_plain_http_closed(server.tls_port)
      assert server.alive?
      refute_match(/connection failed|Error/, server.output)
    end

    define_method("test_cluster_with_#{engine}") do
      server = start(engine, extra, "-w", "2")
      pids = Array.new(6) { curl(server.tls_port, "/", "-H", "Connection: close")[1][/pid=(\d+)/, 1] }
      refute_includes pids, nil
      assert_stalled_handshakes_closed_while_others_served(server.tls_port)
      assert_plain_http_closed(server.tls_port)
    end
  end

  private

  def start(engine, extra, *more)
    # A keep-alive timeout far beyond closed_by_server's deadline: a stalled
    # handshake must be closed by the header timeout, as a slow head is.
    spawn_tls_server("--engine", engine, *extra, *more, "--header-timeout", HEADER_TIMEOUT, "--keepalive-timeout", "120",
                     "-b", @files.bind, app_path("tls"))
  end

  def assert_tls_versions_and_alpn(port)
    alpn = s_client(port, "-alpn", "h2,http/1.1")
    assert_match(/ALPN protocol: http\/1\.1/, alpn)
    assert_match(/Verify return code: 0 \(ok\)/, alpn)
    # The summary line: s_client prints its session block only once a TLS 1.3
    # session ticket has arrived, and it may quit before.
    assert_match(/New, TLSv1\.2, Cipher is ECDHE-/, s_client(port, "-tls1_2"))
    assert_match(/New, TLSv1\.3, Cipher is TLS_/, s_client(port, "-tls1_3"))
    # The client's OpenSSL would refuse TLS 1.1 itself at its default
    # security level: level 0 makes it offer, so the refusal is the server's.
    old = s_client(port, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
    assert_match(/alert protocol version/, old, "the server must refuse TLS 1.1")
    assert_match(/Cipher is \(NONE\)/, old)
  end

  # Two stalled handshakes (one silent, one with half a ClientHello) hold no
  # engine: requests on new connections are answered while they wait, and
  # both are closed once the header timeout passes.
  def assert_stalled_handshakes_closed_while_others_served(port)
    silent = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    half = stalled_handshake(port)
    3.times do
      code, body, err = curl(port, "/", "-H", "Connection: close")
      assert_equal 0, code, "a client was not served while a handshake stalled: #{err}"
      assert_match(/scheme=https/, body)
    end
    closed_by_server(half)
    closed_by_server(silent)
  end

  def assert_plain_http_closed(port)
    socket = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    socket.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    refute_match(/HTTP\/1\.1 200/, closed_by_server(socket))
    assert_equal 0, curl(port)[0], "the server should serve TLS clients after plain HTTP"
  end
end

# A bind that cannot work stops bin/spindle at boot with one line naming the
# file, and no backtrace (test/unit/tls_settings_test.rb has every case).
class TlsBootErrorTest < SpindleIntegrationTest
  def test_a_missing_key_stops_the_boot_with_one_line
    files = TlsFiles.new
    files.server_pair(2)
    process = run_spindle("-b", files.bind(key: files.path("missing-key.pem")), app_path("tls"))
    refute process.status.success?
    assert_match(/\Aspindle: bind ssl:.*cannot read .*missing-key\.pem: No such file or directory\n\z/, process.stderr)
  ensure
    files&.cleanup
  end
end
