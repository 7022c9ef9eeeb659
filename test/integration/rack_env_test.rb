# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# The Rack env the server builds, as the app sees it through a real socket.
class RackEnvTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_origin_form
    echoed = echo(request("GET", "/a/b%20c?x=1&y=2", [["Host", "example.test"]]))
    assert_equal "/a/b%20c", echoed["path"]
    assert_equal "x=1&y=2", echoed["query"]
    assert_equal "example.test", echoed["server_name"]
    # Rack SPEC: SERVER_NAME and SERVER_PORT, with SCRIPT_NAME and PATH_INFO,
    # complete the URL. Host names no port, so the URL's port is the scheme's.
    assert_equal "80", echoed["server_port"], "SERVER_PORT should be the scheme's default when Host has no port"
    assert_equal "HTTP/1.1", echoed["protocol"]
    assert_equal "127.0.0.1", echoed["remote_addr"]
    assert_equal false, echoed["multiprocess"], "one process"
  end

  def test_absolute_form_takes_the_host_from_the_target
    echoed = echo("GET http://target.test:8081/abs?q=1 HTTP/1.1\r\nHost: ignored.test\r\n\r\n")
    assert_equal "/abs", echoed["path"]
    assert_equal "q=1", echoed["query"]
    assert_equal "target.test", echoed["server_name"]
    assert_equal "8081", echoed["server_port"]
  end

  def test_options_asterisk
    echoed = echo("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
    assert_equal "OPTIONS", echoed["method"]
    assert_equal "*", echoed["path"], "Rack SPEC: PATH_INFO is * for asterisk-form"
  end

  def test_repeated_fields_are_combined
    echoed = echo(request("GET", "/dup", [%w[Accept a], %w[Accept b], %w[Cookie c=1], %w[Cookie d=2]]))
    assert_equal "a, b", echoed["headers"]["HTTP_ACCEPT"]
    assert_equal "c=1; d=2", echoed["headers"]["HTTP_COOKIE"]
  end

  def test_underscore_names_never_reach_the_env
    echoed = echo(request("GET", "/underscore", [%w[X-Forwarded-For 1.1.1.1], %w[X_Forwarded_For 6.6.6.6]]))
    assert_equal "1.1.1.1", echoed["headers"]["HTTP_X_FORWARDED_FOR"]
  end

  def test_content_type_and_length_have_no_http_prefix
    echoed = echo(request("POST", "/ct", [["Content-Type", "text/plain"]], body: "abc"))
    assert_equal "text/plain", echoed["headers"]["CONTENT_TYPE"]
    assert_equal "3", echoed["headers"]["CONTENT_LENGTH"]
    refute echoed["headers"].key?("HTTP_CONTENT_TYPE")
    refute echoed["headers"].key?("HTTP_CONTENT_LENGTH")
  end

  private

  def echo(bytes)
    response = roundtrip(bytes)
    assert_equal 200, response.status, response.to_s
    JSON.parse(response.body)
  end
end
