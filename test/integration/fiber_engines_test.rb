# frozen_string_literal: true

require "async"
require "async/barrier"
require_relative "../support/spindle_process"

# The fiber engines on one process: N requests that each wait (socket, sleep,
# Net::HTTP, Async tasks) must all be waiting at the same time. N is larger
# than any thread count, so only waits that yield can pass.
module FiberEngineConcurrency
  N = 24

  def test_socket_waits_yield
    point = rendezvous
    clients = Array.new(N) { send_get("/socket?path=#{point.path}") }
    visits = Array.new(N) { point.await("entered") }
    visits.each(&:release)
    clients.each { |c| assert_equal 200, c.read_response.status }
  end

  def test_sleep_yields
    point = rendezvous
    release = File.join(Dir.mktmpdir("spindle-release"), "go")
    clients = Array.new(N) { send_get("/sleep?path=#{point.path}&release=#{release}") }
    N.times { point.await("entered") }
    File.write(release, "")
    clients.each { |c| assert_equal 200, c.read_response.status }
  end

  def test_net_http_and_dns_yield
    backend = TCPServer.new("127.0.0.1", 0)
    point = rendezvous
    clients = Array.new(N) { send_get("/net_http?path=#{point.path}&port=#{backend.addr[1]}") }
    N.times { point.await("entered") }
    held = Array.new(N) { accept_within(backend) }
    held.each { |s| s.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok") && s.close }
    clients.each { |c| assert_equal 200, c.read_response.status }
  ensure
    backend&.close
  end

  def test_async_tasks_inside_a_request_run_concurrently
    point = rendezvous
    client = send_get("/async?path=#{point.path}")
    visits = Array.new(3) { point.await_any }
    assert_equal %w[task-0 task-1 task-2], visits.map(&:message).sort
    visits.each(&:release)
    assert_equal 200, client.read_response.status
  end

  private

  def send_get(target)
    connection = connect
    connection.write(request("GET", target, [["Connection", "close"]]))
    connection
  end

  def accept_within(server)
    raise "the app never called the back end" unless server.wait_readable(HttpClient::DEFAULT_DEADLINE)

    server.accept
  end
end

{ "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
  klass = Class.new(SpindleIntegrationTest) do
    include FiberEngineConcurrency
    serve_with "-b", SpindleIntegrationTest::LOOPBACK, "--engine", engine, *extra, app_path("waits")
  end
  Object.const_set("#{engine.capitalize}EngineConcurrencyTest", klass)
end
