# frozen_string_literal: true

require "rbconfig"
require_relative "../config/coerce"
require_relative "ruby_version"

module Spindle
  # The settings a process must have from its start: which allocator
  # (jemalloc is LD_PRELOADed) and its arena count (glibc's MALLOC_ARENA_MAX,
  # jemalloc's narenas in MALLOC_CONF), and Ruby's GC limits (LEAN_HEAP,
  # OLD_OBJECT_FACTOR). All are read only at process start, so when they are
  # not already in the environment Spindle re-executes itself once with them
  # set.
  #
  # Why 2 arenas: either allocator gives threads that contend for malloc
  # arenas of their own (glibc up to 8 × cores, jemalloc 4 × cores), and
  # memory freed in one arena cannot serve another, so a threaded server's RSS
  # creeps up while its live heap stays the same. Why jemalloc when it is
  # installed: a reforked Rails worker keeps a third less private memory on it.
  # Measurements: docs/MEMORY.md.
  module MemorySetup
    JEMALLOC_PATHS = ["/usr/lib/*/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"].freeze
    DONE = "SPINDLE_MEMORY_SET"
    # Ruby's heap settings for --lean-heap. A worker's first GCs after a
    # refork find the mold's compacted heap nearly full; with the default 20 %
    # minimum free ratio each worker would grow the heap by pages of its own
    # and fill free slots scattered across shared pages, copying them. 2 %,
    # with growth capped, keeps workers in the pages they share. The 64 MiB
    # oldmalloc floor keeps a busy worker from running major GCs (which write
    # the mark stack it shares with the mold) within seconds of a refork.
    # Measurements: docs/REFORKING.md, "The lean heap".
    LEAN_HEAP = { "RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.02",
                  "RUBY_GC_HEAP_GROWTH_MAX_SLOTS" => "100000",
                  "RUBY_GC_OLDMALLOC_LIMIT" => (64 * 1024 * 1024).to_s }.freeze

    # Ruby's major GCs on Ruby 3.1 and 3.2, where a collection starts once
    # the old objects without a write barrier (Time, MatchData, Method, many
    # C extensions' objects) reach twice their count after the last one. A
    # minor GC makes old every such object it finds alive, and while a
    # process interleaves requests each one in flight holds some: a Rails
    # worker serving several at a time ran several times the major GCs of
    # one serving one at a time, all for that reason. Ruby
    # 3.3 raised that limit to at least 1 % of the old objects and gave most
    # core classes their write barrier; before 3.3 the limit follows only
    # the old-object factor. 8 (Ruby's default is 2) took those workers
    # back to a few major GCs and served more requests at the same RSS.
    # Measurements: docs/MEMORY.md, "Major GCs before Ruby 3.3".
    OLD_OBJECT_FACTOR = { "RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "8" }.freeze

    module_function

    # Returns the environment to re-exec with, or nil when nothing must change.
    # ruby: the version this process runs (for OLD_OBJECT_FACTOR).
    def environment_for(config, env = ENV, ruby: RUBY_VERSION)
      return nil if env[DONE]

      wanted = arenas(config.malloc_arena_max, env)
      wanted.merge!(old_object_factor(ruby, env))
      LEAN_HEAP.each { |name, value| wanted[name] = value unless env.key?(name) } if lean_heap?(config)
      wanted.merge!(jemalloc(config.malloc_arena_max, env)) if allocator(config) == "jemalloc"
      wanted.empty? ? nil : wanted.merge(DONE => "1")
    end

    # "auto" is jemalloc when the library is installed, glibc otherwise.
    def allocator(config)
      return config.allocator unless config.allocator == "auto"

      installed_jemalloc ? "jemalloc" : "glibc"
    end

    # Only where Ruby has no limit of its own (before 3.3), and only when
    # the operator has not set the factor.
    def old_object_factor(ruby, env)
      return {} if env.key?("RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR")
      return {} if RubyVersion.at_least?("3.3", ruby)

      OLD_OBJECT_FACTOR.dup
    end

    def arenas(count, env)
      env.key?("MALLOC_ARENA_MAX") || count.zero? ? {} : { "MALLOC_ARENA_MAX" => count.to_s }
    end

    # The preload, and jemalloc's arena count unless MALLOC_CONF is the
    # operator's own.
    def jemalloc(count, env)
      wanted = {}
      unless env["LD_PRELOAD"].to_s.include?("libjemalloc")
        wanted["LD_PRELOAD"] = [jemalloc_path, env["LD_PRELOAD"]].compact.reject(&:empty?).join(":")
      end
      wanted["MALLOC_CONF"] = "narenas:#{count}" unless env.key?("MALLOC_CONF") || count.zero?
      wanted
    end

    def lean_heap?(config)
      config.lean_heap.nil? ? !config.refork_after.nil? : config.lean_heap
    end

    def installed_jemalloc = JEMALLOC_PATHS.flat_map { |glob| Dir[glob] }.first

    def jemalloc_path
      path = installed_jemalloc
      return path if path

      raise Config::Error, "--allocator jemalloc: libjemalloc.so.2 is not installed " \
                           "(Debian: apt-get install libjemalloc2)"
    end

    def reexec(env, argv)
      exec(env, RbConfig.ruby, File.expand_path("../../../bin/spindle", __dir__), *argv)
    end
  end
end
