# frozen_string_literal: true

require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/request/timed_connection"
require "spindle/engine/outbox"

# Connections over a UNIX socket pair, for unit tests of where idle
# connections wait (the Park, the reactor's selection). The including test
# calls #close_socket_connections in its teardown.
module SocketConnections
  REQUEST = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"

  # A Connection and the client end of its socket. idle_since, deadline:
  # its marks (monotonic times); the deadline defaults to a minute from now.
  # served: it has served one request (#serve_one), so it is a keep-alive
  # connection between requests, not one just accepted.
  # timed: a TimedConnection, which notes when each request began.
  def socket_connection(idle_since: nil, deadline: nil, served: false, timed: false)
    client, server = UNIXSocket.pair
    (@socket_pairs ||= []) << [client, server]
    kind = timed ? Spindle::TimedConnection : Spindle::Connection
    conn = kind.new(server, config = Spindle::Config.new({}), {}, Spindle::Engine::Outbox.new(server, config))
    serve_one(conn, client) if served
    conn.marks.idle_since = idle_since if idle_since
    conn.marks.at = deadline || (Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60)
    [conn, client]
  end

  # Takes conn through one request from client, as an engine does (but for
  # the app and the response): it is idle again, from now.
  def serve_one(conn, client)
    client.write(REQUEST)
    conn.read_nonblock
    raise "the request did not arrive whole" unless conn.advance == :complete

    conn.finish_request_env
    conn.reset_for_next_request
  end

  def close_socket_connections
    (@socket_pairs || []).flatten.each { |io| io.close unless io.closed? }
  end
end
