# frozen_string_literal: true

require "test_helper"
require "open3"

# A newcomer's first `bin/spindle` must leave the clone as it came. The
# Gemfile once pinned async and connection_pool by RUBY_VERSION, so on Ruby
# 3.3 Bundler resolved other DEPENDENCIES than Gemfile.lock's and rewrote the
# tracked lock. Here Bundler resolves our Gemfile on this Ruby from the gems
# installed (no network, nothing written), and what it would write must be
# what is committed: each lane (3.1, 3.3) checks its own Ruby.
class GemfileLockTest < Minitest::Test
  ROOT = Spindle::Native::ROOT

  def test_this_ruby_resolves_the_committed_lock
    printed, status = resolve
    assert status.success?, "bundle lock --local --print failed:\n#{printed}"
    assert_equal sections(File.read(File.join(ROOT, "Gemfile.lock"))), sections(printed)
  end

  private

  # The lock Bundler would write, printed instead of written. The lane's own
  # BUNDLE_GEMFILE (3.3's in tmp/) and Bundler's RUBYOPT are left out.
  def resolve
    env = { "BUNDLE_GEMFILE" => File.join(ROOT, "Gemfile"), "RUBYOPT" => nil, "BUNDLE_BIN_PATH" => nil,
            "BUNDLER_SETUP" => nil, "BUNDLER_VERSION" => nil }
    Open3.capture2e(env, "bundle", "lock", "--local", "--print", chdir: ROOT)
  end

  # Every section but BUNDLED WITH: which Bundler runs is not the app's
  # concern (bin/test-ruby3.3 drops it for 3.3 on purpose).
  def sections(lock)
    lock.split(/\n(?=BUNDLED WITH\n)/).first.strip
  end
end
