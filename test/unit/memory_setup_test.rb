# frozen_string_literal: true

require "test_helper"
require "spindle/config"
require "spindle/memory_setup"

# What environment the server re-executes itself with, for the allocator.
class MemorySetupTest < Minitest::Test
  def env_for(env = {}, **values) = Spindle::MemorySetup.environment_for(Spindle::Config.new(values), env)

  def test_sets_two_arenas_by_default
    assert_equal "2", env_for["MALLOC_ARENA_MAX"]
  end

  def test_leaves_an_arena_count_the_environment_set
    assert_nil env_for({ "MALLOC_ARENA_MAX" => "4" })
  end

  def test_zero_leaves_glibcs_default
    assert_nil env_for(malloc_arena_max: 0)
  end

  def test_jemalloc_is_preloaded
    assert_match(/libjemalloc\.so\.2/, env_for(allocator: "jemalloc")["LD_PRELOAD"])
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
