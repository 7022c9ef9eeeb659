# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"
require_relative "../support/proxy_servers"

# --trusted-proxies: X-Forwarded-For/-Proto/-Host are believed from a trusted
# peer only; from anyone else they reach the app untouched. The echo app
# (all.ru) reports the env it got.
class TrustedProxiesTest < SpindleIntegrationTest
  # 127.0.0.1 is trusted, ::1 is not: the same server, two peers.
  serve_with "-b", LOOPBACK, "-b", "tcp://[::1]:0", "--trusted-proxies", "127.0.0.1/32", app_path("all")

  FORWARDED = [["X-Forwarded-For", "203.0.113.9, 198.51.100.7"], ["X-Forwarded-Proto", "https"],
               ["X-Forwarded-Host", "shop.example:8443"]].freeze

  def test_a_trusted_peer_sets_the_client_address_scheme_and_host
    env = echo(server.binds.first, FORWARDED)
    assert_equal ["198.51.100.7", "https", "shop.example", "8443"],
                 env.values_at("remote_addr", "url_scheme", "server_name", "server_port")
    assert_equal "shop.example:8443", env["headers"]["HTTP_HOST"]
  end

  def test_an_untrusted_peer_changes_nothing_and_its_fields_reach_the_app
    env = echo(server.binds.last, FORWARDED)
    assert_equal ["::1", "http"], env.values_at("remote_addr", "url_scheme")
    assert_equal "test.invalid", env["headers"]["HTTP_HOST"]
    assert_equal "203.0.113.9, 198.51.100.7", env["headers"]["HTTP_X_FORWARDED_FOR"]
    assert_equal "https", env["headers"]["HTTP_X_FORWARDED_PROTO"]
  end

  def test_malformed_fields_from_a_trusted_peer_are_ignored
    env = echo(server.binds.first, [["X-Forwarded-For", "not-an-ip, 1.2.3.4"], ["X-Forwarded-Proto", "gopher"],
                                    ["X-Forwarded-Host", "bad host"]])
    assert_equal ["127.0.0.1", "http", "test.invalid"], [env["remote_addr"], env["url_scheme"], env["headers"]["HTTP_HOST"]]
    assert_still_serving
  end

  # A real nginx in front, appending the address it got the request from
  # (the usual $proxy_add_x_forwarded_for). The client comes from 127.0.0.5,
  # nginx reaches Spindle from 127.0.0.1 (trusted): the app sees 127.0.0.5,
  # and an X-Forwarded-For the client wrote itself is not believed.
  def test_behind_a_real_nginx_the_app_sees_the_client_and_not_its_claims
    skip "nginx is not installed (bin/test installs it)" unless ProxyServer.available?(NginxServer::BINARY)

    backend = server.binds.first
    nginx = start_nginx(backend)
    plain = through(nginx, [])
    assert_equal ["127.0.0.5", "https", "127.0.0.1"], [plain["remote_addr"], plain["url_scheme"], plain["server_name"]],
                 "what the app saw through nginx:\n#{plain}\n#{nginx.output}"
    spoofed = through(nginx, [["X-Forwarded-For", "6.6.6.6"]])
    assert_equal "127.0.0.5", spoofed["remote_addr"], "a client's own X-Forwarded-For must not be believed"
    assert_equal "6.6.6.6, 127.0.0.5", spoofed["headers"]["HTTP_X_FORWARDED_FOR"]
  ensure
    nginx&.stop
  end

  private

  def echo(bind, fields)
    connection = connect(server, bind)
    connection.write(request("GET", "/echo", fields + [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, response.to_s
    JSON.parse(response.body)
  end

  def start_nginx(backend)
    NginxServer.new do |dir, port|
      NginxServer.config(dir, port, <<~LOCATION)
        location / {
            proxy_pass http://#{backend.host}:#{backend.port};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto https;
            proxy_set_header X-Forwarded-Host $host;
          }
      LOCATION
    end.start
  end

  # One request to nginx from the loopback address 127.0.0.5.
  def through(nginx, fields)
    socket = Socket.tcp("127.0.0.1", nginx.port, "127.0.0.5", 0, connect_timeout: HttpClient::DEFAULT_DEADLINE)
    connection = HttpClient::Connection.new(socket)
    @connections << connection
    connection.write(request("GET", "/via-nginx", fields + [["Host", "127.0.0.1"], ["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, "#{response}\n#{nginx.output}"
    JSON.parse(response.body)
  end
end
