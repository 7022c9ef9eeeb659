# frozen_string_literal: true

require "minitest/autorun"
require "fileutils"
require_relative "../lib/bench"

# SPINDLE_BASELINE with --ruby 3.3: bench/run makes the worktree on the host
# and hands the chroot, which has no git, the commit; there the worktree is
# found by that name without asking git.
class BaselineTest < Minitest::Test
  NAME = "not-a-commit-#{Process.pid}".freeze

  def teardown
    FileUtils.rm_rf(File.join(Bench::Baseline::DIR, NAME))
  end

  def test_a_worktree_already_there_is_taken_without_git
    FileUtils.mkdir_p(File.join(Bench::Baseline::DIR, NAME, "bin"))
    FileUtils.touch(File.join(Bench::Baseline::DIR, NAME, "bin", "spindle"))
    assert_equal NAME, Bench::Baseline.worktree(NAME), "git would have refused this name"
  end

  def test_an_unknown_rev_is_refused_by_git
    assert_raises(RuntimeError) { Bench::Baseline.worktree(NAME) }
  end

  def test_the_gemfile_is_the_worktrees_own_on_this_ruby_or_a_lane_one
    root = File.join(Bench::Baseline::DIR, NAME)
    lane = Bench::Paths::SERVER_LANE
    expected = lane ? File.join(root, "tmp", lane, "Gemfile") : File.join(root, "Gemfile")
    assert_equal expected, Bench::Baseline.gemfile(root)
  end
end
