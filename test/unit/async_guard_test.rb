# frozen_string_literal: true

require "test_helper"
require "spindle/engine/async_guard"

# Issue #13: on Ruby 3.1 with async 2.24.0 (which an app's bundle resolved
# while the gemspec allowed it), the fibers and hybrid engines crashed at boot
# with `undefined method 'timeout' for #<IO>` from inside async. The guard
# turns that into one start-up line naming the Gemfile pin.
class AsyncGuardTest < Minitest::Test
  Guard = Spindle::Engine::AsyncGuard

  def test_async_2_24_on_ruby_3_1_is_refused_with_the_pin_to_add
    error = assert_raises(Spindle::Engine::Unavailable) { Guard.check!(ruby_version: "3.1.2", async_version: "2.24.0") }
    assert_equal 'async 2.24.0 needs Ruby 3.2 (it calls IO#timeout) and this is Ruby 3.1.2: ' \
                 'add gem "async", "< 2.24" to your Gemfile and run bundle update async', error.message
  end

  # A start-up error like an unknown engine: bin/spindle prints it as one line
  # and exits 2.
  def test_it_is_a_startup_error
    assert_operator Spindle::Engine::Unavailable, :<, Spindle::Engine::UnknownEngine
  end

  def test_working_combinations_pass
    [["3.1.2", "2.23.1"], ["3.1.2", "2.8.0"], ["3.2.0", "2.24.0"], ["3.3.8", "2.24.0"], ["3.3.8", "2.30.0"]].each do |ruby, async|
      assert_nil Guard.problem(ruby, async), "ruby #{ruby} with async #{async}"
    end
  end

  # The gemspec excludes the one broken release; every later async requires
  # Ruby 3.2, so Bundler picks a working one on 3.1 and on 3.3.
  def test_the_gemspec_excludes_async_2_24_0
    spec = Gem::Specification.load(File.expand_path("../../spindle-server.gemspec", __dir__))
    async = spec.runtime_dependencies.find { |d| d.name == "async" }
    refute async.match?("async", "2.24.0")
    assert async.match?("async", "2.23.1")
    assert async.match?("async", "2.25.0")
    refute async.match?("async", "3.0.0")
  end
end
