# frozen_string_literal: true

module Spindle
  # Engines: how one process runs requests. Each is a class behind one small
  # interface, looked up by name and loaded only when picked:
  #
  #   engine = Spindle::Engine.fetch("threads").new(listeners:, handler:, config:, log:)
  #   engine.run   # serves until stopped; returns once drained
  #   engine.stop  # from any thread: stop accepting, finish in-flight requests
  #   engine.backlog  # complete requests waiting for a thread (0 where none wait)
  #   Engine::Threads.multithread?  # => what rack.multithread says
  #   Engine::Threads.threads?      # => whether --threads sizes it
  #   Engine::Threads.connection_capacity(config)  # => the most connections one process holds
  #
  # The Handler does the per-request work; an engine only decides when to read,
  # on which thread or fiber to call it, and what to do with its outcome.
  module Engine
    # name => [file, class, --threads when no layer sets it]. The threads
    # engine's pool is Puma's default size. hybrid's loops share one GVL,
    # and every loop past the first pays for handoffs of it on each request
    # (blog page, 2 processes: 1.9x the CPU per request at 5 loops, 1.3x at
    # 2, against 1; ENGINES.md), so it runs two: a request's CPU work then
    # holds half its clients. blocking and fibers run one thread whatever
    # --threads says; their entry is only what Config#threads reads back.
    REGISTRY = {
      "blocking" => ["engine/blocking", :Blocking, [1, 5]],
      "threads" => ["engine/threads", :Threads, [1, 5]],
      "fibers" => ["engine/fibers", :Fibers, [1, 5]],
      "hybrid" => ["engine/hybrid", :Hybrid, [1, 2]],
    }.freeze

    class UnknownEngine < StandardError; end

    def self.names = REGISTRY.keys

    # The one check of an engine's name (Config's --engine uses it too):
    # returns the name as a String, or raises UnknownEngine.
    def self.check(name)
      return name.to_s if REGISTRY.key?(name.to_s)

      raise UnknownEngine, "unknown engine #{name.to_s.inspect} (choose from #{names.join(', ')})"
    end

    def self.default_threads(name) = REGISTRY.fetch(check(name))[2]

    def self.fetch(name)
      path, const = REGISTRY.fetch(check(name))
      require_relative path
      const_get(const)
    end
  end
end
