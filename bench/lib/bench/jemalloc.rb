# frozen_string_literal: true

require_relative "paths"
require File.join(Bench::Paths::ROOT, "lib", "spindle", "config")
require File.join(Bench::Paths::ROOT, "lib", "spindle", "boot", "memory_setup")

module Bench
  # jemalloc exactly as Spindle sets it up by default when it is installed
  # (Spindle::MemorySetup, with the default arena count), for running a peer
  # or the plain arenas script on the same allocator.
  module Jemalloc
    ARENAS = Spindle::Config::BY_NAME.fetch(:malloc_arena_max).default_value
    SETTINGS = "jemalloc, MALLOC_CONF=narenas:#{ARENAS}"

    module_function

    # { "LD_PRELOAD" => ..., "MALLOC_CONF" => "narenas:2" }; raises when the
    # library is not installed (bench/run installs it, Bench::Setup).
    def settings = Spindle::MemorySetup.jemalloc(ARENAS, {})

    def path = settings.fetch("LD_PRELOAD")

    # A command prefix: `env LD_PRELOAD=... MALLOC_CONF=...`. env(1) execs
    # the server, so the pid the harness started is the server's.
    def env = ["env", *settings.map { |name, value| "#{name}=#{value}" }]
  end
end
