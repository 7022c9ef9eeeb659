# frozen_string_literal: true

require "minitest/autorun"
require "spindle/boot/mn_threads_check"

# The boot warning for Ruby's M:N threads under the threads engine, which they
# stalled in our load tests on Ruby 3.3.8 (docs/ENGINES.md).
class MnThreadsCheckTest < Minitest::Test
  MN = "ruby 3.3.8 (2025-04-09 revision b200bad6cd) +YJIT +MN [x86_64-linux]"
  PLAIN = "ruby 3.3.8 (2025-04-09 revision b200bad6cd) +YJIT [x86_64-linux]"

  def test_the_threads_engine_is_warned_when_ruby_runs_m_n_threads
    warning = Spindle::MnThreadsCheck.warning("threads", description: MN)
    assert_match(/\ARUBY_MN_THREADS=1 is set/, warning)
    assert_includes warning, "Unset RUBY_MN_THREADS, or use another engine"
  end

  def test_no_warning_without_m_n_threads
    assert_nil Spindle::MnThreadsCheck.warning("threads", description: PLAIN)
  end

  def test_no_warning_for_the_engines_that_served_under_m_n_threads
    %w[blocking fibers hybrid].each do |engine|
      assert_nil Spindle::MnThreadsCheck.warning(engine, description: MN), engine
    end
  end
end
