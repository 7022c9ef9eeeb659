# frozen_string_literal: true

require "delegate"
require "json"
require_relative "../support/spindle_process"
require_relative "../support/tls_setup"

# A close while the client may still be sending lingers (RFC 9112 §9.6,
# Engine::LingeringClose): the last response says connection: close, no
# request after it is read, the rest of the input is read and dropped, and
# the connection ends with an end of stream. Closed with that input unread,
# the kernel sent a reset instead, and a reset discards what the client has
# not read yet: the responses written just before it.
#
# The clients write in a thread of their own while the test reads, as a
# pipelining client does, and send more than the server reads at once, so
# that input is still unread in the kernel when the server closes.
class LingeringCloseTest < SpindleIntegrationTest
  LIMIT = 10
  PIPELINED = 50
  PAD = "x" * 4096 # 50 requests of 4 KiB: more than one read takes
  MAX_BODY = 64 * 1024
  ARGS = ["-b", LOOPBACK, "--max-keepalive-requests", LIMIT.to_s, "--max-body", MAX_BODY.to_s,
          app_path("all")].freeze
  serve_with("--engine", "threads", *ARGS)

  def test_pipelining_past_the_keep_alive_limit_delivers_every_response_written
    connection = connect
    send_behind(connection, Array.new(PIPELINED) { |i| request("GET", "/linger/#{i}", [["X-Pad", PAD]]) }.join)
    responses = Array.new(LIMIT) { connection.read_response }
    assert_equal Array.new(LIMIT) { |i| "/linger/#{i}" }, responses.map { |r| JSON.parse(r.body)["path"] }
    assert responses.last.close?, "the last response the limit allows should say connection: close:\n#{responses.last}"
    assert responses[0...-1].none?(&:close?), "only the last response should say connection: close"
    assert_ends_with_end_of_stream(connection)
    refute app_saw?("/linger/#{LIMIT}"), "no request after the last one allowed may reach the app"
  end

  def test_bad_request_in_a_pipeline_with_more_behind_it
    connection = connect
    good = Array.new(3) { |i| request("GET", "/linger-ok/#{i}") }.join
    bad = "GET /linger-bad-5d1e HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
    send_behind(connection, good + bad + (request("GET", "/linger-after", [["X-Pad", PAD]]) * PIPELINED))
    assert_equal Array.new(3) { |i| "/linger-ok/#{i}" }, Array.new(3) { JSON.parse(connection.read_response.body)["path"] }
    refused = connection.read_response
    assert_equal 400, refused.status
    assert refused.close?, refused.to_s
    assert_ends_with_end_of_stream(connection)
    refute app_saw?("linger-bad-5d1e")
    refute app_saw?("linger-after")
  end

  def test_body_too_large_is_answered_while_the_body_still_arrives
    connection = connect
    body = "b" * (MAX_BODY * 8)
    send_behind(connection, request("POST", "/linger-large-0c7a", body: body))
    response = connection.read_response
    assert_equal 413, response.status
    assert response.close?, response.to_s
    assert_ends_with_end_of_stream(connection)
    refute app_saw?("linger-large-0c7a")
  end

  # A lingering connection holds no thread or fiber an app needs: the
  # others are served meanwhile (the blocking engine has one thread).
  def test_others_are_served_while_a_close_lingers
    connection = connect
    connection.write("GET /linger-held HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n" + ("z" * 1024))
    assert_equal 400, connection.read_response.status
    assert_equal "", connection.read_until_eof # the write side is shut; this client neither closes nor sends
    assert_still_serving
  end

  # A stop waits for a lingering connection no longer than its bounds,
  # however long its client keeps the connection open.
  def test_a_stop_does_not_wait_on_a_client_that_never_closes
    process = spawn_server("--engine", self.class.engine, *ARGS)
    connection = connect(process)
    connection.write("GET /linger-stop HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n" + ("z" * 1024))
    assert_equal 400, connection.read_response.status
    assert_equal "", connection.read_until_eof
    status = process.stop(:TERM)
    assert status&.success?, "the server should drain and exit while a close lingers:\n#{process.output}"
  end

  def self.engine = "threads"

  private

  # Writes bytes from a thread of its own while the test reads, as a
  # pipelining client does. A reset ends the write early: the thread's
  # value is then the error, which the write reports if it sees the reset
  # before the reads do.
  def send_behind(connection, bytes)
    writer = Thread.new do
      connection.write(bytes, deadline: 30)
      :written
    rescue Errno::EPIPE, Errno::ECONNRESET, IOError => e
      e.class
    end
    @writers << writer
    writer
  end

  def before_setup
    super
    @writers = []
  end

  # After the connections are closed, which ends any write still waiting.
  def after_teardown
    super
  ensure
    @writers.each { |writer| writer.join(HttpClient::DEFAULT_DEADLINE) }
  end

  # Read and written alike: the server drops what it no longer reads, so
  # the client's write ends too.
  def assert_ends_with_end_of_stream(connection)
    assert_equal "", connection.read_until_eof, "nothing should follow the last response"
    refute connection.reset?, "the connection should end with an end of stream, not a reset " \
                              "(which discards responses the client has not read yet)"
    assert_equal [:written], @writers.map { |writer| writer.join(HttpClient::DEFAULT_DEADLINE)&.value },
                 "the client's writes should all be taken (read and dropped), none reset"
  end
end

%w[blocking fibers hybrid].each do |engine|
  Class.new(LingeringCloseTest) do
    serve_with("--engine", engine, *LingeringCloseTest::ARGS)
    define_singleton_method(:engine) { engine }
  end.then { |klass| Object.const_set("LingeringClose#{engine.capitalize}Test", klass) }
end

# The same over TLS: the client reads the TLS end of stream (close_notify)
# after the last response, which an OpenSSL 3 client requires (an end of
# stream without it raises "unexpected eof"). This client writes everything,
# then reads.
class LingeringCloseTlsTest < SpindleIntegrationTest
  include TlsClients
  include TlsFixture

  %w[blocking threads fibers hybrid].each do |engine|
    define_method("test_pipelining_past_the_keep_alive_limit_with_#{engine}") do
      server = spawn_tls_server("--engine", engine, "--max-keepalive-requests", LingeringCloseTest::LIMIT.to_s,
                                "-b", @files.bind, app_path("all"))
      ssl = tls_connect(server.tls_port)
      pipelined = Array.new(LingeringCloseTest::PIPELINED) do |i|
        request("GET", "/status/#{i}", [["X-Pad", LingeringCloseTest::PAD]])
      end
      begin
        ssl.write(pipelined.join)
      rescue Errno::EPIPE, Errno::ECONNRESET
        nil # the server closed first: what it sent must still arrive
      end
      connection = HttpClient::Connection.new(Waitable.new(ssl))
      responses = Array.new(LingeringCloseTest::LIMIT) { connection.read_response }
      assert_equal [200], responses.map(&:status).uniq
      assert responses.last.close?, responses.last.to_s
      assert_equal "", connection.read_until_eof
      refute connection.reset?, "the connection should end with the TLS end of stream, not a reset"
    ensure
      ssl&.close
    end
  end

  # HttpClient::Connection waits on its socket; an SSLSocket has no
  # wait_readable of its own (decrypted bytes first, then the socket's).
  class Waitable < SimpleDelegator
    def wait_readable(timeout)
      __getobj__.pending.positive? || __getobj__.to_io.wait_readable(timeout)
    end
  end

  private

  def tls_connect(port)
    tcp = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    ssl = OpenSSL::SSL::SSLSocket.new(tcp, OpenSSL::SSL::SSLContext.new)
    ssl.sync_close = true
    nil until ssl_connected?(ssl)
    ssl
  end
end
