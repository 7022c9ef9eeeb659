# frozen_string_literal: true

module Spindle
  # Engines: how one process runs requests. Each is a class behind one small
  # interface, looked up by name and loaded only when picked:
  #
  #   engine = Spindle::Engine.fetch("threads").new(listeners:, handler:, config:, log:, phase:)
  #   engine.run   # serves until the Phase drains; returns once drained
  #   phase.drain! # from any thread: stop accepting, finish in-flight requests
  #   engine.stop  # the same, for those that hold only the engine
  #   engine.backlog  # complete requests waiting for the app: for a thread, at an AppGate (0 where none wait)
  #   engine.open_connections  # connections open now, every loop's (Engine::Connections#count)
  #   Engine::Threads.multithread?  # => what rack.multithread says
  #   Engine::Threads.sizing(config)  # => what sizes it, for the start-up line ("threads=1:5"; nil: nothing)
  #   Engine::Threads.connection_capacity(config)  # => the most connections one process holds
  #
  # The Handler does the per-request work; an engine only decides when to read,
  # on which thread or fiber to call it, and what to do with its outcome.
  module Engine
    # name => [file, class].
    REGISTRY = {
      "blocking" => ["engine/blocking", :Blocking],
      "threads" => ["engine/threads", :Threads],
      "fibers" => ["engine/fibers", :Fibers],
      "hybrid" => ["engine/hybrid", :Hybrid],
    }.freeze

    class UnknownEngine < StandardError; end

    def self.names = REGISTRY.keys

    # The one check of an engine's name (Config's --engine uses it too):
    # returns the name as a String, or raises UnknownEngine.
    def self.check(name)
      return name.to_s if REGISTRY.key?(name.to_s)

      raise UnknownEngine, "unknown engine #{name.to_s.inspect} (choose from #{names.join(', ')})"
    end

    def self.fetch(name)
      path, const = REGISTRY.fetch(check(name))
      require_relative path
      const_get(const)
    end
  end
end
