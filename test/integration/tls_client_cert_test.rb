# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/tls_setup"

# Client certificates: verify_mode=force_peer refuses a client without one,
# verify_mode=peer lets it in; a verified certificate reaches the app as
# SSL_CLIENT_CERT (PEM).
class TlsClientCertTest < SpindleIntegrationTest
  include TlsClients

  def setup
    @files = TlsFiles.new
    @files.server_pair(2)
    @cert, @key = @files.client_pair
  end

  def teardown
    @files.cleanup
  end

  def test_force_peer_requires_a_certificate_signed_by_the_ca
    server = spawn_tls_server("-b", @files.bind(ca: @files.ca_path, verify_mode: "force_peer"), app_path("tls"))
    port = server.tls_port
    net_http(port, cert: @cert, key: @key) do |http|
      assert_match(/client=\/CN=client /, http.get("/").body)
      assert_match(/client=\/CN=client /, http.get("/again").body) # every request on the connection
    end
    refute_equal 0, curl(port)[0], "a client without a certificate must be refused"

    stranger = TlsFiles.new # a certificate from another CA
    begin
      cert, key = stranger.client_pair("stranger")
      refute_equal 0, curl(port, "/", "--cert", cert, "--key", key)[0]
    ensure
      stranger.cleanup
    end
    assert_equal 0, curl(port, "/", "--cert", @cert, "--key", @key)[0]
  end

  def test_peer_lets_a_client_without_a_certificate_in
    server = spawn_tls_server("-b", @files.bind(ca: @files.ca_path, verify_mode: "peer"), app_path("tls"))
    code, body, = curl(server.tls_port)
    assert_equal 0, code
    assert_match(/client=none/, body)
    assert_match(/client=\/CN=client /, curl(server.tls_port, "/", "--cert", @cert, "--key", @key)[1])
  end
end
