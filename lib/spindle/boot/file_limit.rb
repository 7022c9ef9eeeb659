# frozen_string_literal: true

module Spindle
  # The process's open-file limit. Every connection is a file descriptor: with
  # the common soft limit of 1024, accept fails (EMFILE) long before the
  # connection cap, and a server at EMFILE can only pause accepting, not make
  # room by closing idle connections (Engine::Eviction works at the cap).
  module FileLimit
    # Descriptors a process needs besides its connections: listeners, logs,
    # the app's files and database sockets, spooled request bodies.
    HEADROOM = 64

    module_function

    # Raises the soft limit to the hard limit (no privilege needed) and
    # returns the soft limit in force, or nil where there is none to read.
    def raise_to_hard
      soft, hard = Process.getrlimit(:NOFILE)
      return soft if soft >= hard

      Process.setrlimit(:NOFILE, hard, hard)
      hard
    rescue Errno::EPERM, Errno::EINVAL
      soft
    rescue NotImplementedError
      nil
    end

    # Raises the limit; says on log when it still cannot hold connections
    # (the engine's cap per process).
    def ensure_room(connections, log)
      limit = raise_to_hard
      return unless limit && limit < connections + HEADROOM

      log.error("open-file limit is #{limit}, below the #{connections} connections this process may hold " \
                "(+#{HEADROOM}): past it accepts fail instead of closing idle connections; " \
                "raise the hard limit (ulimit -Hn) or lower --max-connections")
    end
  end
end
