# frozen_string_literal: true

module Spindle
  # The sockets this process handed to the app (rack.hijack, a 101 with a
  # hijack callable): from then on they are the app's, and the server forgot
  # them. A process forked from this one, a worker of the next generation
  # forked from the mold, inherits their descriptors all the same, and no
  # thread of the app there knows them. Each such copy kept the connection
  # open after the process that served it had closed it or exited: the
  # client never saw it end. The child closes its copies first
  # (#close_inherited); the process that took them keeps its own.
  #
  # Weakly held: a socket the app dropped is collected as before.
  module HandedSockets
    @sockets = ObjectSpace::WeakMap.new

    def self.add(io)
      @sockets[io] = true
      io
    end

    # In a child just forked: closes the descriptors of every socket handed
    # over in the parent. Only the descriptor: a TLS socket's underlying one
    # (Object#to_io), so no close_notify goes out on a session the parent's
    # app still runs. Returns how many were open.
    def self.close_inherited
      inherited = []
      @sockets.each_key { |io| inherited << io.to_io }
      @sockets = ObjectSpace::WeakMap.new
      inherited.count { |io| close(io) }
    end

    def self.close(io)
      return false if io.closed?

      io.close
      true
    rescue IOError, SystemCallError
      false
    end
    private_class_method :close
  end
end
