# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/waiting"

# At --max-connections no request a client sent is failed (docs/SECURITY.md,
# "Connections"), on every engine, in one process and in a cluster's
# workers. Room is made by closing idle keep-alive connections, which a
# server may close between requests (RFC 9112 §9.3); a new connection
# whose request has not arrived yet is kept, and while nothing may be
# closed, new clients wait in the kernel's backlog until a slot frees.
#
# The new clients connect first and send their request after: the server
# accepts them before their first byte, the gap in which it used to take
# them for idle ones and close them unread, failing their requests.
class ConnectionCapRequestsTest < SpindleIntegrationTest
  include Waiting

  CAP = 10
  NEW_CLIENTS = 50
  ENGINES = { "blocking" => [], "threads" => ["--threads", "#{CAP}:#{CAP}"], "fibers" => [], "hybrid" => [] }.freeze
  # Requests inside the app at once with every slot busy: the blocking
  # engine serves one at a time, the others all of them.
  INSIDE = Hash.new(CAP).merge("blocking" => 1).freeze

  ENGINES.each do |engine, extra|
    define_method("test_new_clients_take_the_place_of_idle_keep_alive_connections_with_#{engine}") do
      app = cap_server(engine, extra)
      assert_every_new_client_served(app, CAP)
    end

    define_method("test_new_clients_take_the_place_of_idle_keep_alive_connections_in_a_cluster_with_#{engine}") do
      app = cap_server(engine, extra, "-w", "2")
      assert_every_new_client_served(app, 2 * CAP)
    end

    define_method("test_new_clients_wait_for_busy_connections_with_#{engine}") do
      app = cap_server(engine, extra)
      gate = rendezvous
      busy = Array.new(CAP) { send_request(app, "/gate?path=#{gate.path}", close: true) }
      visits = Array.new(INSIDE[engine]) { gate.await("entered") } # every slot is taken, none idle

      fresh = Array.new(2 * CAP) { connect(app) }
      visits.each(&:release)
      (CAP - visits.size).times { gate.await("entered").release } # the blocking engine's, one by one
      busy.each { |connection| assert_equal 200, connection.read_response.status, app.output }

      assert_responses(app, fresh.each_with_index.map { |connection, i| send_on(connection, "/new/#{i}") })
    end
  end

  private

  def cap_server(engine, extra, *more)
    spawn_server("--engine", engine, *extra, *more, "--max-connections", CAP.to_s, "--keepalive-timeout", "60",
                 "-b", LOOPBACK, app_path("all"))
  end

  # `idle` keep-alive connections fill the cap, then NEW_CLIENTS connect; the
  # first ones take the idle connections' places, and every one of them has
  # its request answered.
  def assert_every_new_client_served(app, idle)
    kept = Array.new(idle) { |i| send_request(app, "/idle/#{i}").tap { |c| assert_equal 200, c.read_response.status } }
    fresh = Array.new(NEW_CLIENTS) { connect(app) }
    wait_until("the server closes the idle keep-alive connections for new clients") do
      kept.all? { |connection| closed_by_server?(connection) }
    end

    assert_responses(app, fresh.each_with_index.map { |connection, i| send_on(connection, "/new/#{i}") })
  end

  def send_request(app, target, close: false) = send_on(connect(app), target, close: close)

  def send_on(connection, target, close: false)
    connection.write(request("GET", target, close ? [["Connection", "close"]] : []))
  rescue SystemCallError => e
    flunk "a request could not be sent (#{e.class}): the server closed the connection unread"
  end

  # Every connection gets its response: none is closed with its request unread.
  def assert_responses(app, connections)
    statuses = connections.map do |connection|
      connection.read_response.status
    rescue HttpClient::Timeout, HttpClient::ProtocolError, SystemCallError => e
      e.class.name
    end
    failed = statuses.count { |status| status != 200 }
    assert_equal 0, failed, "#{failed} of #{statuses.size} requests failed: #{statuses.tally}\n#{app.output}"
  end

  # The server closed it: the end of the stream is there.
  def closed_by_server?(connection)
    socket = connection.socket
    return false unless socket.wait_readable(0)

    [nil, ""].include?(socket.read_nonblock(1, exception: false))
  rescue Errno::ECONNRESET
    true
  end
end
