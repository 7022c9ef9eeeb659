# frozen_string_literal: true

require "digest"
require "json"
require_relative "../support/spindle_process"

# What every engine promises, whatever its concurrency model. Included into one
# test class per engine (see engines_test.rb); each class shares one server
# started with `--engine NAME`.
#
# Tests close their connections when they finish, and concurrent requests say
# Connection: close, so each test leaves the shared server as it found it: no
# idle connection of one test counts against the next one's (the connection
# cap, a drain). The blocking engine watches every open connection but runs
# one request at a time.
module EngineContract
  CONCURRENT_CLIENTS = 40

  def test_start_line_names_the_engine
    assert_match(/ engine=#{Regexp.escape(engine)}( |\z)/, server.start_line)
  end

  def test_env_is_true_to_the_engine
    echoed = JSON.parse(roundtrip(request("GET", "/env", [["Connection", "close"]])).body)
    assert_equal multithread?, echoed["multithread"], "rack.multithread for the #{engine} engine"
    assert_equal false, echoed["run_once"]
  end

  def test_keep_alive
    connection = connect
    3.times do |i|
      connection.write(request("GET", "/ka/#{i}"))
      response = connection.read_response
      assert_equal "/ka/#{i}", JSON.parse(response.body)["path"]
      refute response.close?
    end
  end

  def test_pipelining
    connection = connect
    connection.write(request("GET", "/p/1") + request("POST", "/p/2", body: "two") + request("GET", "/p/3"))
    echoed = 3.times.map { JSON.parse(connection.read_response.body).values_at("path", "body") }
    assert_equal [["/p/1", ""], ["/p/2", "two"], ["/p/3", ""]], echoed
  end

  def test_chunked_upload
    response = roundtrip(request("POST", "/chunked", [["Transfer-Encoding", "chunked"]],
                                 body: HttpClient.chunked("con", "tract")))
    assert_equal "contract", JSON.parse(response.body)["body"]
  end

  def test_large_upload
    payload = Random.new(3).bytes(3 * 1024 * 1024)
    report = JSON.parse(roundtrip(request("POST", "/upload", body: payload)).body)
    assert_equal payload.bytesize, report["body_size"]
    assert_equal Digest::SHA256.hexdigest(payload), report["body_sha256"]
  end

  def test_head
    connection = connect
    connection.write(request("HEAD", "/status/") + request("GET", "/after-head"))
    head = connection.read_response(head: true)
    assert_equal "12", head["content-length"]
    assert_equal "/after-head", JSON.parse(connection.read_response.body)["path"]
  end

  def test_expect_100_continue
    connection = connect
    connection.write(request("POST", "/continue", [["Expect", "100-continue"], ["Content-Length", "4"]]))
    assert_equal 100, connection.read_response(interim: false).status
    connection.write("body")
    assert_equal "body", JSON.parse(connection.read_response.body)["body"]
  end

  def test_streaming
    gate = rendezvous
    connection = connect
    connection.write(request("GET", "/stream?count=1&gate=#{gate.path}"))
    assert_equal "chunked", connection.read_head["transfer-encoding"]
    assert_equal "chunk-0\n", connection.read_chunk
    gate.await("entered").release
    assert_equal "chunk-1\n", connection.read_chunk
    assert_nil connection.read_chunk
  end

  def test_full_hijack
    connection = connect
    connection.write(request("GET", "/hijack"))
    assert_equal 200, connection.read_head.status
    assert_equal "hijacked\n", connection.read_exactly(9)
    connection.write("ping\n")
    assert_equal "echo: ping\n", connection.read_until_eof
  end

  def test_partial_hijack
    connection = connect
    connection.write(request("GET", "/partial_hijack"))
    assert_equal 200, connection.read_head.status
    assert_equal "partial\n", connection.read_exactly(8)
    connection.write("pong\n")
    assert_equal "echo: pong\n", connection.read_until_eof
  end

  def test_exception_becomes_500_and_serving_goes_on
    response = roundtrip(request("GET", "/raise", [["Connection", "close"]]))
    assert_equal 500, response.status
    refute_includes response.body, "spindle-test-boom"
    assert_still_serving
  end

  def test_bad_request_is_refused_and_closed
    connection = connect
    connection.write("GET /contract-bad-a41c HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
    response = connection.read_response
    assert_equal 400, response.status
    assert response.close?, response.to_s
    assert_closed_by_server(connection)
    refute app_saw?("contract-bad-a41c")
    assert_still_serving
  end

  def test_many_concurrent_connections_are_all_answered
    process = server # started here, not raced for by the client threads
    clients = Array.new(CONCURRENT_CLIENTS) do |i|
      Thread.new do
        connection = process.connect
        begin
          connection.write(request("POST", "/many/#{i}", [["Connection", "close"]], body: "client-#{i}"))
          JSON.parse(connection.read_response(deadline: 30).body).values_at("path", "body")
        ensure
          connection.close
        end
      end
    end
    answers = clients.map(&:value)
    assert_equal Array.new(CONCURRENT_CLIENTS) { |i| ["/many/#{i}", "client-#{i}"] }, answers
  end

  private

  def engine
    self.class.engine
  end

  def multithread?
    self.class.multithread
  end
end
