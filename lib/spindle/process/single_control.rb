# frozen_string_literal: true

require_relative "../cluster/control_server"

module Spindle
  # --control for a process serving alone (no -w): the endpoint, protocol
  # and spindlectl of a cluster (Cluster::ControlServer), answered by this
  # process. A command that is a signal's is that signal sent to this
  # process, so it goes the signal's own way (Signals::SINGLE): stop, drain,
  # hot-restart and reopen do exactly what TERM, QUIT, USR2 and HUP do. gc
  # runs a full GC here; stats reports this process (SingleStats). The
  # commands that need workers are answered with why.
  class SingleControl
    RETRY = 0.5 # seconds between two tries for the address a predecessor still holds

    NEEDS_WORKERS = {
      "phased-restart" => "a phased restart needs workers (-w N); hot-restart restarts a process alone",
      "refork" => "a refork needs workers (-w N)",
      "add-worker" => "adding a worker needs workers (-w N)",
      "remove-worker" => "removing a worker needs workers (-w N)",
    }.freeze
    COMMANDS = Cluster::ControlSession::COMMANDS.merge(NEEDS_WORKERS).freeze

    # stats: a SingleStats.
    def initialize(config, stats)
      @stats = stats
      @endpoint = Cluster::ControlServer.new(config.control, config.control_token, self, commands: COMMANDS)
    end

    # Raises Listener::Error when the endpoint cannot listen. A successor
    # (USR2), once it serves and before it tells its predecessor to drain,
    # takes a unix socket over at once (ControlServer#prepare_unix_path),
    # while the predecessor's file is still there to replace: the
    # predecessor then leaves the new file alone. A TCP port the
    # predecessor still holds is waited for until it lets it go, which it
    # does when it starts to drain (SingleServices#draining).
    def start(successor: false)
      @endpoint.start
      self
    rescue Listener::Error
      raise unless successor

      @waiter = Thread.new { start_when_free }
      self
    end

    def close
      @waiter&.kill
      @endpoint.close
    end

    # The endpoint's queue: a signal name, :GC, or [:stats, reply].
    def push(item)
      case item
      when Array then item.last << @stats.to_h
      when :GC then GC.start
      else Process.kill(item, Process.pid)
      end
    end

    private

    def start_when_free
      @endpoint.start
    rescue Listener::Error
      sleep RETRY
      retry
    end
  end
end
