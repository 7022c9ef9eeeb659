# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/engine/outbox"
require_relative "../support/proxy_protocol_vectors"

# A PROXY bind's connection, read the way every engine reads it (a real
# socket pair, Connection#read_nonblock and #advance), with the header and
# the request after it arriving in two reads split at every byte offset: the
# request is complete only once both are whole, and its env names the client
# the header gave.
class ConnectionProxyHeaderTest < Minitest::Test
  V = ProxyProtocolVectors
  REQUEST = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n".b

  def open_connection(proxy_protocol: true)
    @client, server = UNIXSocket.pair
    config = Spindle::Config.new({})
    Spindle::Connection.new(server, config, { "REMOTE_ADDR" => "127.0.0.1" },
                            Spindle::Engine::Outbox.new(server, config), proxy_protocol: proxy_protocol)
  end

  def teardown
    @client&.close unless @client&.closed?
  end

  %w[v1_tcp4 v1_tcp6 v1_unknown v2_tcp6 v2_tcp4_with_tlvs v2_local].each do |name|
    define_method("test_#{name}_then_a_request_split_at_every_offset") do
      header, addr, port = V::VALID.fetch(name)
      bytes = header + REQUEST
      (1...bytes.bytesize).each do |cut|
        conn = open_connection
        assert_equal :incomplete, deliver(conn, bytes.byteslice(0, cut)), "#{name}, cut at #{cut}"
        assert conn.awaiting_proxy_header? == (cut < header.bytesize), "#{name}, cut at #{cut}"
        assert_equal :complete, deliver(conn, bytes.byteslice(cut..)), "#{name}, cut at #{cut}"
        env = conn.finish_request_env
        assert_equal [addr || "127.0.0.1", port, "/x"], env.values_at("REMOTE_ADDR", "REMOTE_PORT", "PATH_INFO")
        conn.close
        @client.close
      end
    end
  end

  # The header is taken once: on a kept-alive connection a second one is an
  # HTTP request line, and the parser refuses it.
  def test_a_second_header_on_the_connection_is_not_one
    conn = open_connection
    assert_equal :complete, deliver(conn, V::VALID.fetch("v1_tcp4").first + REQUEST)
    conn.finish_request_env
    conn.reset_for_next_request
    assert_raises(Spindle::HTTP::ParseError) { deliver(conn, V::VALID.fetch("v1_tcp6").first + REQUEST) }
  end

  def test_bad_headers_are_refused_before_any_http
    V::INVALID.each do |name, bytes|
      conn = open_connection
      assert_raises(Spindle::HTTP::ProxyHeader::Error, name) { deliver(conn, bytes) }
      conn.close
      @client.close
    end
  end

  # Without the bind option, a PROXY line is a bad request line.
  def test_a_bind_without_the_option_never_reads_a_header
    conn = open_connection(proxy_protocol: false)
    refute conn.awaiting_proxy_header?
    assert_raises(Spindle::HTTP::ParseError) { deliver(conn, V::VALID.fetch("v1_tcp4").first + REQUEST) }
  end

  private

  # Writes bytes and has the connection read (one read: a socket pair hands
  # over a small write whole) and parse them.
  def deliver(conn, bytes)
    @client.write(bytes)
    assert conn.io.wait_readable(5), "the bytes did not arrive"
    assert_equal :data, conn.read_nonblock
    conn.advance
  end
end
