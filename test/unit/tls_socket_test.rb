# frozen_string_literal: true

require "minitest/autorun"
require "spindle/listener"
require "spindle/tls/context"
require_relative "../support/tls_setup"

# TLS::Socket in-process, over a socket pair: the handshake is driven by
# nonblocking reads, bytes OpenSSL holds decrypted count as buffered, and a
# broken or plain-text peer reads as end of stream.
class TlsSocketTest < Minitest::Test
  DEADLINE = 10

  def setup
    @files = TlsFiles.new
    @files.server_pair(2)
    @cert, @key = @files.client_pair
    settings = Spindle::TLS::Settings.parse("cert=#{@files.path('cert.pem')}&key=#{@files.path('key.pem')}" \
                                            "&ca=#{@files.ca_path}&verify_mode=peer", "test")
    @context = Spindle::TLS::Context.new(settings, "test")
    @client_io, server_io = UNIXSocket.pair
    @server = @context.wrap(server_io)
  end

  def teardown
    @server.close unless @server.closed?
    @client_io.close unless @client_io.closed?
    @files.cleanup
  end

  def test_the_handshake_is_driven_by_reads_that_never_wait
    client = connect_in_thread
    buffer = String.new
    refute @server.established?
    steps = read_until_data(buffer)
    assert_operator steps, :>, 1, "the first reads step through the handshake"
    assert @server.established?
    assert_equal "hello", buffer
    assert_equal 5, @server.write_nonblock("world", exception: false)
    assert_equal "world", client.value.sysread(5)
  end

  def test_a_write_before_the_handshake_is_a_client_gone
    assert_raises(IOError) { @server.write_nonblock("HTTP/1.1 408\r\n", exception: false) }
  end

  def test_decrypted_bytes_held_by_openssl_count_as_buffered
    client = connect_in_thread(payload: "x" * 16_000)
    buffer = String.new
    read_until_data(buffer, size: 100)
    assert_equal 100, buffer.bytesize
    assert @server.buffered?, "OpenSSL holds the rest of the record"
    refute @server.to_io.wait_readable(0), "the kernel has nothing left: epoll would not wake"
    assert @server.wait_readable(0), "wait_readable must see OpenSSL's bytes"
    client.value
  end

  def test_the_client_certificate_goes_into_the_env
    env = {}
    @server.env = env
    client = connect_in_thread(cert: @cert, key: @key)
    read_until_data(String.new)
    assert_match(/CN=client/, OpenSSL::X509::Certificate.new(env.fetch("SSL_CLIENT_CERT")).subject.to_s)
    client.value
  end

  def test_plain_http_reads_as_end_of_stream
    @client_io.write("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    @server.to_io.wait_readable(DEADLINE)
    assert_nil @server.read_nonblock(100, String.new, exception: false)
  end

  private

  # Reads nonblockingly, waiting between steps as an engine would; returns
  # how many reads it took.
  def read_until_data(buffer, size: 1024)
    (1..).each do |step|
      got = @server.read_nonblock(size, buffer, exception: false)
      return step if got.is_a?(String)

      flunk "the read ended: #{got.inspect}" if got.nil?
      assert @server.wait_readable(DEADLINE), "no progress within #{DEADLINE}s"
    end
  end

  def connect_in_thread(payload: "hello", cert: nil, key: nil)
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.cert = OpenSSL::X509::Certificate.new(File.read(cert)) if cert
    ctx.key = OpenSSL::PKey.read(File.read(key)) if key
    Thread.new do
      ssl = OpenSSL::SSL::SSLSocket.new(@client_io, ctx)
      ssl.connect
      ssl.syswrite(payload)
      ssl
    end
  end
end

# A read that must write first: the server's first flight (a long chain)
# does not fit in the socket's send buffer while the client reads nothing.
# The read answers :wait_writable, #wait_readable waits for room, and the
# selector engines' Selection watches the socket for room, not for bytes.
class TlsWantsWriteTest < Minitest::Test
  DEADLINE = 10

  def setup
    @files = TlsFiles.new
    @files.server_pair(2)
    chain = File.read(@files.path("cert.pem")) + (File.read(@files.ca_path) * 60) # ~40 KB of certificates
    @files.write("chain.pem", chain)
    settings = Spindle::TLS::Settings.parse("cert=#{@files.path('chain.pem')}&key=#{@files.path('key.pem')}", "test")
    @client_io, server_io = UNIXSocket.pair
    server_io.setsockopt(:SOCKET, :SNDBUF, 4096)
    @client_io.setsockopt(:SOCKET, :RCVBUF, 4096)
    @server = Spindle::TLS::Context.new(settings, "test").wrap(server_io)
    @client = OpenSSL::SSL::SSLSocket.new(@client_io, OpenSSL::SSL::SSLContext.new)
    assert_equal :wait_readable, @client.connect_nonblock(exception: false) # the ClientHello is sent
  end

  def teardown
    stop_client_thread
    @server.close unless @server.closed?
    @client_io.close unless @client_io.closed?
    @files.cleanup
  end

  def test_a_handshake_that_must_write_first_waits_for_room
    assert @server.to_io.wait_readable(DEADLINE)
    assert_equal :wait_writable, @server.read_nonblock(1024, String.new, exception: false)
    assert @server.wants_write?
    refute @server.wait_readable(0), "no room until the client reads"
    finish_client_handshake_in_thread
    assert @server.wait_readable(DEADLINE), "room once the client reads"
  end

  def test_the_selection_watches_for_room_then_for_bytes
    require "spindle/config"
    require "spindle/engine/selection"
    require "spindle/engine/outbox"
    require "spindle/request/connection"
    config = Spindle::Config.new({})
    conn = Spindle::Connection.new(@server, config, {}, Spindle::Engine::Outbox.new(@server, config), tls: true)
    selection = Spindle::Engine::Selection.new([], nil, Spindle::Engine::Deadlines.new(config),
                                               Spindle::Engine::Connections.new)
    selection.watch(conn)
    assert_equal :wait, conn.read_nonblock until @server.wants_write?
    selection.follow_tls(conn)
    finish_client_handshake_in_thread
    ready = []
    selection.select(DEADLINE) { |owner| ready << owner }
    assert_equal [conn], ready, "the selection should wake when the client makes room"
  ensure
    selection&.close
  end

  private

  # The client's handshake fails once the test closes the server side.
  def stop_client_thread
    @thread&.kill&.join(DEADLINE)
  rescue OpenSSL::SSL::SSLError, IOError, SystemCallError
    nil
  end

  def finish_client_handshake_in_thread
    @thread = Thread.new do
      Thread.current.report_on_exception = false # the test may end first, closing the socket
      loop do
        step = @client.connect_nonblock(exception: false)
        break if step.equal?(@client)

        step == :wait_readable ? @client_io.wait_readable(DEADLINE) : @client_io.wait_writable(DEADLINE)
      end
      @client.write("GET / HTTP/1.1\r\n")
    end
  end
end
