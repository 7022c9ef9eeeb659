# frozen_string_literal: true

require "test_helper"
require "spindle/boot/bootstrap"

# bin/spindle skips `bundle check` while its stamp is newer than the files it
# watches. The stamp was one per Ruby and group, watching only our Gemfile: a
# run with BUNDLE_GEMFILE naming an app's Gemfile then skipped the check of
# that Gemfile whenever ours had been checked, and Bundler failed later on a
# missing gem instead of installing it.
class BootstrapStampTest < Minitest::Test
  Bootstrap = Spindle::Bootstrap
  OWN = File.join(Spindle::Native::ROOT, "Gemfile")

  def test_our_gemfile_keeps_its_stamp_and_files
    assert_equal File.join(Spindle::Native::ROOT, "tmp", "bundle-ok-#{RUBY_VERSION}-#{RUBY_PLATFORM}-test"), Bootstrap.stamp_for(OWN, ["test"])
    assert_equal Bootstrap::OWN_FILES, Bootstrap.watched_for(OWN)
  end

  def test_another_gemfile_has_its_own_stamp_and_is_watched_with_its_lock
    app = "/srv/app/Gemfile"
    refute_equal Bootstrap.stamp_for(OWN, []), Bootstrap.stamp_for(app, [])
    refute_equal Bootstrap.stamp_for("/srv/other/Gemfile", []), Bootstrap.stamp_for(app, [])
    assert_includes Bootstrap.watched_for(app), app
    assert_includes Bootstrap.watched_for(app), "#{app}.lock"
  end
end
