# frozen_string_literal: true

require "socket"

module Bench
  # A port nobody listens on right now. Every start gets a fresh one, so a
  # server that is slow to release its socket never delays the next start.
  module FreePort
    def self.pick
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end
  end
end
