# frozen_string_literal: true

require_relative "../support/spindle_process"

# At --max-connections, a new client is let in by closing the connections
# idle the longest (docs/SECURITY.md, "Connections"), on every engine.
# Before, the server stopped accepting, so idle clients locked real users out.
class ConnectionCapTest < SpindleIntegrationTest
  CAP = 20
  NORMAL = 5
  # hybrid with one loop: the cap is that loop's, so which connection is the
  # oldest is one loop's order (test_hybrid_loops_share_the_cap has two).
  ENGINES = { "blocking" => [], "threads" => [], "fibers" => [], "hybrid" => ["--loops", "1"] }.freeze

  ENGINES.each do |engine, extra|
    define_method("test_idle_keep_alive_connections_make_room_with_#{engine}") do
      app = cap_server(engine, extra)
      idle = Array.new(CAP) { |i| served_keep_alive(app, i) }
      NORMAL.times { |i| assert_equal 200, normal_request(app, i).status }

      closed = idle.map { |connection| closed_by_server?(connection) }
      assert closed.any?, "the server should have closed idle connections to make room"
      assert_equal closed.sort_by { |c| c ? 0 : 1 }, closed, "the oldest idle connections go first: #{closed.inspect}\n#{app.output}"
      refute closed.last, "the newest idle connection should be kept: #{closed.inspect}"
    end

    define_method("test_connections_that_never_send_a_request_make_room_with_#{engine}") do
      app = cap_server(engine, extra)
      silent = Array.new(CAP) { connect(app) }
      NORMAL.times { |i| assert_equal 200, normal_request(app, i).status }
      assert(silent.any? { |connection| closed_by_server?(connection) })
    end
  end

  # Two loops hold CAP between them, not CAP each: at CAP idle clients, new
  # ones make room. (When each loop had the whole cap, none was closed.)
  def test_hybrid_loops_share_the_cap
    app = cap_server("hybrid", ["--loops", "2"])
    idle = Array.new(CAP) { |i| served_keep_alive(app, i) }
    NORMAL.times { |i| assert_equal 200, normal_request(app, i).status }
    assert(idle.any? { |connection| closed_by_server?(connection) }, "no idle connection was closed\n#{app.output}")
  end

  private

  def cap_server(engine, extra)
    spawn_server("--engine", engine, *extra, "--max-connections", CAP.to_s, "--keepalive-timeout", "60",
                 "-b", LOOPBACK, app_path("echo"))
  end

  # A keep-alive connection that made one request and then went quiet.
  def served_keep_alive(app, index)
    connection = connect(app)
    connection.write(request("GET", "/idle/#{index}"))
    assert_equal 200, connection.read_response.status
    connection
  end

  def normal_request(app, index)
    roundtrip(request("GET", "/normal/#{index}", [["Connection", "close"]]), app)
  end

  # The server closed it: the end of the stream is already there. Evictions
  # happen before the new client is served, so no wait is needed.
  def closed_by_server?(connection)
    socket = connection.socket
    return false unless socket.wait_readable(0)

    [nil, ""].include?(socket.read_nonblock(1, exception: false))
  rescue Errno::ECONNRESET
    true
  end
end
