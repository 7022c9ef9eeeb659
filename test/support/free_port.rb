# frozen_string_literal: true

require "socket"

# A loopback port that was free a moment ago (bound to 0 and released), for a
# test that must name the port before the server binds it (systemd's socket
# activation, a proxy in front, the same address across a restart). Freshly
# released, it is not taken by another process in that moment unless the
# machine is very busy; the start then fails loudly.
module FreePort
  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.local_address.ip_port
  ensure
    server&.close
  end
end
