# frozen_string_literal: true

require "rbconfig"
require_relative "config/coerce"

module Spindle
  # The allocator settings a process must have from its first malloc: glibc's
  # arena count (MALLOC_ARENA_MAX) and, for jemalloc, LD_PRELOAD. Both are read
  # only at process start, so when they are not already in the environment
  # Spindle re-executes itself once with them set.
  #
  # Why 2 arenas: glibc gives each thread that contends for malloc its own arena
  # (up to 8 × cores), and memory freed in one arena cannot serve another, so a
  # threaded Ruby server's RSS creeps up. The seed measured >1 GB with the
  # default vs 600–700 MB with MALLOC_ARENA_MAX=2 on 20 allocating threads; see
  # docs/MEMORY.md and docs/benchmarks/arenas.md for ours.
  module MemorySetup
    JEMALLOC_PATHS = ["/usr/lib/*/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"].freeze
    DONE = "SPINDLE_MEMORY_SET"

    module_function

    # Returns the environment to re-exec with, or nil when nothing must change.
    def environment_for(config, env = ENV)
      return nil if env[DONE]

      wanted = {}
      unless env.key?("MALLOC_ARENA_MAX") || config.malloc_arena_max.zero?
        wanted["MALLOC_ARENA_MAX"] = config.malloc_arena_max.to_s
      end
      if config.allocator == "jemalloc" && !env["LD_PRELOAD"].to_s.include?("libjemalloc")
        wanted["LD_PRELOAD"] = [jemalloc_path, env["LD_PRELOAD"]].compact.reject(&:empty?).join(":")
      end
      wanted.empty? ? nil : wanted.merge(DONE => "1")
    end

    def jemalloc_path
      path = JEMALLOC_PATHS.flat_map { |glob| Dir[glob] }.first
      return path if path

      raise Config::Error, "--allocator jemalloc: libjemalloc.so.2 is not installed " \
                           "(Debian: apt-get install libjemalloc2)"
    end

    def reexec(env, argv)
      exec(env, RbConfig.ruby, File.expand_path("../../bin/spindle", __dir__), *argv)
    end
  end
end
