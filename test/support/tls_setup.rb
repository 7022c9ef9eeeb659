# frozen_string_literal: true

require "openssl"
require "net/http"
require "open3"
require "socket"
require "tmpdir"
require "fileutils"
require_relative "spindle_process"

# Throwaway certificates for the TLS tests, made with Ruby's OpenSSL in a
# temporary directory (never committed): a CA, a server certificate for
# localhost and 127.0.0.1 signed by it, and a client certificate. Each server
# certificate gets a serial of its own, which is how a test tells which pair
# the server presented.
class TlsFiles
  attr_reader :dir, :ca_path

  def initialize
    @dir = Dir.mktmpdir("spindle-tls")
    @ca_key = OpenSSL::PKey::EC.generate("prime256v1")
    @ca = certificate("/CN=Spindle test CA", 1, @ca_key, nil, ca: true)
    @ca_path = write("ca.pem", @ca.to_pem)
  end

  # Writes a new server pair to cert.pem/key.pem (or the names given); returns its serial.
  def server_pair(serial, cert: "cert.pem", key: "key.pem")
    pair_key = OpenSSL::PKey::EC.generate("prime256v1")
    cert_pem = certificate("/CN=localhost", serial, pair_key, "DNS:localhost,IP:127.0.0.1").to_pem
    write(key, pair_key.private_to_pem)
    write(cert, cert_pem)
    serial
  end

  # A client certificate and key signed by the CA: [cert_path, key_path].
  def client_pair(name = "client")
    pair_key = OpenSSL::PKey::EC.generate("prime256v1")
    [write("#{name}.pem", certificate("/CN=#{name}", 500, pair_key, nil).to_pem),
     write("#{name}-key.pem", pair_key.private_to_pem)]
  end

  def path(name) = File.join(@dir, name)

  # The bind for the pair in cert.pem/key.pem, plus query parameters.
  def bind(**params)
    query = URI.encode_www_form({ "cert" => path("cert.pem"), "key" => path("key.pem") }.merge(params.transform_keys(&:to_s)))
    "ssl://127.0.0.1:0?#{query}"
  end

  def cleanup = FileUtils.rm_rf(@dir)

  # Replaces a file whole (a rename), as a deployment tool does.
  def write(name, text)
    target = path(name)
    File.write("#{target}.tmp", text)
    File.rename("#{target}.tmp", target)
    target
  end

  private

  def certificate(subject, serial, key, san, ca: false)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = serial
    cert.subject = OpenSSL::X509::Name.parse(subject)
    cert.issuer = ca ? cert.subject : @ca.subject
    cert.public_key = key
    cert.not_before = Time.now - 60
    cert.not_after = Time.now + 3600
    extensions(cert, san, ca)
    cert.sign(ca ? key : @ca_key, "SHA256")
    cert
  end

  def extensions(cert, san, ca)
    factory = OpenSSL::X509::ExtensionFactory.new(cert, ca ? cert : @ca)
    cert.add_extension(factory.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
    cert.add_extension(factory.create_extension("keyUsage", "keyCertSign, cRLSign", true)) if ca
    cert.add_extension(factory.create_extension("subjectAltName", san)) if san
  end
end

# bin/spindle with ssl:// binds: the start-up line names them ssl://HOST:PORT.
class TlsProcess < SpindleProcess
  def self.parse_bind(uri)
    match = %r{\Assl://([^:/\[\]]+):(\d+)\z}.match(uri)
    return super unless match

    Bind.new(uri: uri, scheme: "ssl", host: match[1], port: Integer(match[2]))
  end

  # SpindleProcess keeps the live processes (killed at exit) in its own class.
  def self.register(process) = SpindleProcess.register(process)
  def self.unregister(process) = SpindleProcess.unregister(process)

  def tls_port = @binds.find { |bind| bind.scheme == "ssl" }.port
end

# Clients for the TLS tests: curl, openssl s_client, Net::HTTP and a raw
# Ruby handshake. Each one is bounded in time.
module TlsClients
  CLIENT_DEADLINE = 10

  def spawn_tls_server(*args, env: {})
    process = TlsProcess.start(*args, env: env)
    @processes << process
    process
  end

  # [status, stdout, stderr] of curl.
  def curl(port, path = "/", *extra, ca: @files.ca_path)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", CLIENT_DEADLINE.to_s, "--cacert", ca,
                                      *extra, "https://127.0.0.1:#{port}#{path}")
    [status.exitstatus, out, err]
  end

  # openssl s_client's output, for a handshake with the given flags; it sends
  # nothing and ends at once ("Q" on stdin).
  def s_client(port, *flags)
    out, = Open3.capture2e("timeout", CLIENT_DEADLINE.to_s, "openssl", "s_client", "-connect", "127.0.0.1:#{port}",
                           "-CAfile", @files.ca_path, *flags, stdin_data: "Q\n")
    out
  end

  # Net::HTTP, verifying against the test CA; yields the started session.
  def net_http(port, cert: nil, key: nil, &block)
    http = Net::HTTP.new("127.0.0.1", port)
    http.use_ssl = true
    http.ca_file = @files.ca_path
    http.verify_mode = OpenSSL::SSL::VERIFY_PEER
    http.open_timeout = http.read_timeout = CLIENT_DEADLINE
    if cert
      http.cert = OpenSSL::X509::Certificate.new(File.read(cert))
      http.key = OpenSSL::PKey.read(File.read(key))
    end
    http.start(&block)
  end

  # The serial of the certificate the server presents on a new handshake.
  def presented_serial(port)
    tcp = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    ssl = OpenSSL::SSL::SSLSocket.new(tcp, OpenSSL::SSL::SSLContext.new)
    ssl.sync_close = true
    nil until ssl_connected?(ssl)
    ssl.peer_cert.serial.to_i
  ensure
    ssl ? ssl.close : tcp&.close
  end

  # [serial of the certificate presented, pid of the process that answered]
  # for one request on a new connection (tls.ru says its pid).
  def serial_and_pid(port)
    tcp = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    ssl = OpenSSL::SSL::SSLSocket.new(tcp, OpenSSL::SSL::SSLContext.new)
    ssl.sync_close = true
    nil until ssl_connected?(ssl)
    ssl.write("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    flunk "no response within #{CLIENT_DEADLINE}s" unless ssl.to_io.wait_readable(CLIENT_DEADLINE)
    [ssl.peer_cert.serial.to_i, ssl.read[/pid=(\d+)/, 1]]
  ensure
    ssl ? ssl.close : tcp&.close
  end

  # A TCP connection that begins a TLS handshake and stops: a record header
  # that promises a ClientHello, then nothing more.
  def stalled_handshake(port)
    socket = Socket.tcp("127.0.0.1", port, connect_timeout: CLIENT_DEADLINE)
    socket.write("\x16\x03\x01\x02\x00\x01\x00\x01".b)
    socket
  end

  # Waits until the server closes socket (read returns EOF or a reset);
  # returns whatever it sent before (a TLS alert, say).
  def closed_by_server(socket, deadline: 30)
    seen = +""
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    loop do
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "the server did not close the connection within #{deadline}s" if remaining <= 0
      next unless socket.wait_readable(remaining)

      chunk = socket.read_nonblock(4096, exception: false)
      return seen if chunk.nil?

      seen << chunk if chunk.is_a?(String)
    end
  rescue Errno::ECONNRESET
    seen
  ensure
    socket.close
  end

  private

  def ssl_connected?(ssl)
    result = ssl.connect_nonblock(exception: false)
    return true if result.equal?(ssl)

    ready = result == :wait_readable ? ssl.to_io.wait_readable(CLIENT_DEADLINE) : ssl.to_io.wait_writable(CLIENT_DEADLINE)
    flunk "no TLS handshake within #{CLIENT_DEADLINE}s" unless ready
    false
  end
end

# A test's own throwaway CA and server pair (serial 2), removed after it.
module TlsFixture
  def setup
    super
    @files = TlsFiles.new
    @files.server_pair(2)
  end

  def teardown
    @files&.cleanup
    super
  end
end
