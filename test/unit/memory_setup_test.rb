# frozen_string_literal: true

require "test_helper"
require "spindle/config"
require "spindle/boot/memory_setup"
require "spindle/cli"

# What environment the server re-executes itself with, for the allocator.
class MemorySetupTest < Minitest::Test
  # Ruby 3.3 by default, where the old-object factor is left alone.
  def env_for(env = {}, ruby: "3.3.8", **values)
    Spindle::MemorySetup.environment_for(Spindle::Config.new(values), env, ruby: ruby)
  end

  def test_before_ruby_3_3_the_old_object_factor_is_raised
    assert_equal "8", env_for(ruby: "3.1.2")["RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR"]
    assert_equal "8", env_for(ruby: "3.2.9")["RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR"]
    assert_nil env_for(ruby: "3.3.0")["RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR"]
    assert_nil env_for(ruby: "3.4.1")["RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR"]
  end

  def test_the_operators_old_object_factor_is_kept
    assert_nil env_for({ "RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "2" }, ruby: "3.1.2", allocator: "glibc",
                       malloc_arena_max: 0)
  end

  def test_sets_two_arenas_by_default
    assert_equal "2", env_for["MALLOC_ARENA_MAX"]
  end

  def test_leaves_an_arena_count_the_environment_set
    assert_nil env_for({ "MALLOC_ARENA_MAX" => "4" }, allocator: "glibc")
  end

  def test_zero_leaves_glibcs_default
    assert_nil env_for(malloc_arena_max: 0, allocator: "glibc")
  end

  def test_glibc_preloads_nothing
    env = env_for(allocator: "glibc")
    assert_nil env["LD_PRELOAD"]
    assert_nil env["MALLOC_CONF"]
  end

  def test_jemalloc_is_preloaded_with_the_arena_count
    env = env_for(allocator: "jemalloc", malloc_arena_max: 3)
    assert_match(/libjemalloc\.so\.2/, env["LD_PRELOAD"])
    assert_equal "narenas:3", env["MALLOC_CONF"]
  end

  def test_jemalloc_keeps_the_operators_malloc_conf_and_preloads
    env = env_for({ "MALLOC_CONF" => "narenas:8", "LD_PRELOAD" => "/lib/other.so" }, allocator: "jemalloc")
    refute env.key?("MALLOC_CONF")
    assert_match(%r{libjemalloc\.so\.2:/lib/other\.so\z}, env["LD_PRELOAD"])
    assert_nil env_for({ "LD_PRELOAD" => "/x/libjemalloc.so.2" }, allocator: "jemalloc", malloc_arena_max: 0)
  end

  def test_auto_is_jemalloc_exactly_when_it_is_installed
    installed = Spindle::MemorySetup.installed_jemalloc
    assert_equal installed, env_for["LD_PRELOAD"]
    assert_equal(installed ? "narenas:2" : nil, env_for["MALLOC_CONF"])
  end

  def test_an_unknown_allocator_is_refused
    error = assert_raises(Spindle::Config::Error) { Spindle::CLI.new.parse(%w[--allocator tcmalloc]) }
    assert_match(/auto, glibc, jemalloc/, error.message)
  end

  def test_never_twice
    assert_nil env_for({ "SPINDLE_MEMORY_SET" => "1" })
  end

  def test_a_lean_heap_comes_with_refork_after
    assert_equal "0.02", env_for(refork_after: "1000")["RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO"]
    assert_nil env_for["RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO"]
  end

  def test_a_lean_heap_raises_the_oldmalloc_floor
    assert_equal "67108864", env_for(lean_heap: true)["RUBY_GC_OLDMALLOC_LIMIT"]
    assert_nil env_for({ "RUBY_GC_OLDMALLOC_LIMIT" => "1000" }, lean_heap: true)["RUBY_GC_OLDMALLOC_LIMIT"]
  end

  def test_lean_heap_can_be_asked_for_or_refused
    assert_equal "100000", env_for(lean_heap: true)["RUBY_GC_HEAP_GROWTH_MAX_SLOTS"]
    assert_nil env_for(refork_after: "1000", lean_heap: false)["RUBY_GC_HEAP_GROWTH_MAX_SLOTS"]
  end

  def test_leaves_heap_settings_the_environment_set
    env = env_for({ "RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.1" }, lean_heap: true)
    refute env.key?("RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO")
    assert_equal "100000", env["RUBY_GC_HEAP_GROWTH_MAX_SLOTS"]
  end
end
