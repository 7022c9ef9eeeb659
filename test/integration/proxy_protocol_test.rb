# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/proxy_protocol_vectors"

# ?proxy_protocol=true on every engine, in raw bytes: valid v1 and v2 headers
# set REMOTE_ADDR/REMOTE_PORT; every bad header is refused (closed, nothing
# written back, the app never called); a bind without the option reads a
# PROXY line as the bad request line it is; a slow header meets
# --header-timeout. Real HAProxy in front: proxy_protocol_haproxy_test.rb.
module ProxyProtocolContract
  V = ProxyProtocolVectors

  def proxy_bind = server.binds[0]
  def plain_bind = server.binds[1]
  def unix_proxy_bind = server.binds[2]

  V::VALID.each do |name, (header, addr, port)|
    define_method("test_valid_#{name}_names_the_client") do
      env = echo(proxy_bind, header)
      assert_equal [addr || "127.0.0.1", port], env.values_at("remote_addr", "remote_port"), name
    end
  end

  def test_valid_headers_on_a_unix_bind
    env = echo(unix_proxy_bind, V::VALID.fetch("v2_tcp6").first)
    assert_equal %w[2001:db8::10 40000], env.values_at("remote_addr", "remote_port")
    env = echo(unix_proxy_bind, V::VALID.fetch("v1_unknown").first)
    assert_equal "127.0.0.1", env["remote_addr"], "UNKNOWN keeps the peer (a unix peer is 127.0.0.1)"
  end

  # A byte per write (the unit tests cut at every offset; this is the wiring).
  %w[v1_tcp6 v2_tcp4_with_tlvs].each do |name|
    define_method("test_#{name}_a_byte_per_write_is_taken") do
      header, addr, = V::VALID.fetch(name)
      bytes = header + request("GET", "/split", [["Connection", "close"]])
      connection = connect(server, proxy_bind)
      bytes.each_byte { |byte| connection.write(byte.chr) }
      assert_equal addr, JSON.parse(connection.read_response.body)["remote_addr"]
    end
  end

  def test_a_bad_header_a_byte_per_write_is_refused_unanswered
    connection = connect(server, proxy_bind)
    V::INVALID.fetch("v1_bad_ipv4").each_byte { |byte| connection.write(byte.chr) }
    assert_equal "", assert_closed_by_server(connection)
  end

  # The header is the connection's, once: every request on it has the
  # client's address, and a second PROXY line is a bad request line.
  def test_keep_alive_keeps_the_client_and_a_second_header_is_refused_as_http
    connection = connect(server, proxy_bind)
    connection.write(V::VALID.fetch("v1_tcp4").first + request("GET", "/first"))
    assert_equal "192.0.2.10", JSON.parse(connection.read_response.body)["remote_addr"]
    connection.write(request("GET", "/second"))
    assert_equal "192.0.2.10", JSON.parse(connection.read_response.body)["remote_addr"]
    connection.write(V::VALID.fetch("v1_tcp6").first + request("GET", "/third-8a1"))
    assert_equal 400, connection.read_response.status
    refute app_saw?("third-8a1")
  end

  V::INVALID.each do |name, bytes|
    define_method("test_invalid_#{name}_is_refused_unanswered") do
      marker = "refused-#{name}"
      connection = connect(server, proxy_bind)
      connection.write(bytes + request("GET", "/#{marker}", [["Connection", "close"]]))
      assert_equal "", assert_closed_by_server(connection), "#{name}: a refused header gets no answer"
      refute app_saw?(marker), "#{name}: the app was called"
      # The line is written as the connection closes: wait for it.
      assert server.wait_for_output(/PROXY protocol header refused from 127\.0\.0\.1: /), server.output
      assert_still_serving_on(proxy_bind)
    end
  end

  # A scanner must not flood the log: one line, then at most one a minute.
  def test_refusals_are_logged_once
    3.times do
      connection = connect(server, proxy_bind)
      connection.write("GET / HTTP/1.1\r\n\r\n")
      assert_closed_by_server(connection)
    end
    assert_operator server.output.scan("PROXY protocol header refused").size, :<=, 1, server.output
  end

  def test_a_bind_without_the_option_answers_a_proxy_line_with_400
    V::VALID.values_at("v1_tcp4").each do |header, _|
      response = roundtrip(header + request("GET", "/plain-7c2", [["Connection", "close"]]))
      assert_equal 400, response.status
    end
    refute app_saw?("plain-7c2")
  end

  # Slow and endless headers meet the header timeout (1 s for this server):
  # closed, with no 408 (nothing was said in HTTP).
  def test_a_slow_header_is_closed_at_the_header_timeout_unanswered
    connection = connect(server, proxy_bind)
    connection.write("PROXY TCP4 192.0.2.")
    assert_equal "", assert_closed_by_server(connection, "a header that never ends must be closed")
    v2 = connect(server, proxy_bind)
    v2.write(V::VALID.fetch("v2_tcp6").first.byteslice(0, 20))
    assert_equal "", assert_closed_by_server(v2, "a v2 header short of its length must be closed")
  end

  private

  def echo(bind, header)
    connection = connect(server, bind)
    connection.write(header + request("GET", "/echo", [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, "#{response}\n#{server.output}"
    JSON.parse(response.body)
  end

  def assert_still_serving_on(bind)
    connection = connect(server, bind)
    connection.write(V::VALID.fetch("v1_unknown").first + request("GET", "/still", [["Connection", "close"]]))
    assert_equal 200, connection.read_response.status
  end

  # A plain bind's connection for all.ru's helpers (assert_still_serving, app_saw?).
  def roundtrip(bytes, process = server, head: false)
    return super unless process == server

    connection = connect(server, plain_bind)
    connection.write(bytes)
    connection.read_response(head: head)
  ensure
    connection&.close
  end
end

%w[blocking threads fibers hybrid].each do |engine|
  socket = File.join(Dir.mktmpdir("spp"), "p.sock")
  klass = Class.new(SpindleIntegrationTest) do
    include ProxyProtocolContract
    serve_with "-b", "tcp://127.0.0.1:0?proxy_protocol=true", "-b", SpindleIntegrationTest::LOOPBACK,
               "-b", "unix://#{socket}?proxy_protocol=true", "--engine", engine, "--header-timeout", "1",
               app_path("all")
  end
  Object.const_set("#{engine.capitalize}ProxyProtocolTest", klass)
end
