# frozen_string_literal: true

require "socket"
require "spindle/config"
require "spindle/connection"
require "spindle/engine/outbox"

# Connections over a UNIX socket pair, for unit tests of where idle
# connections wait (the Park, the reactor's selection). The including test
# calls #close_socket_connections in its teardown.
module SocketConnections
  # A Connection and the client end of its socket. idle_since, deadline:
  # its marks (monotonic times); the deadline defaults to a minute from now.
  def socket_connection(idle_since: nil, deadline: nil)
    client, server = UNIXSocket.pair
    (@socket_pairs ||= []) << [client, server]
    conn = Spindle::Connection.new(server, config = Spindle::Config.new({}), {},
                                    Spindle::Engine::Outbox.new(server, config))
    conn.marks.idle_since = idle_since if idle_since
    conn.marks.at = deadline || (Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60)
    [conn, client]
  end

  def close_socket_connections
    (@socket_pairs || []).flatten.each { |io| io.close unless io.closed? }
  end
end
