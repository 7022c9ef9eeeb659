# frozen_string_literal: true

require "test_helper"
require "spindle/boot/bootstrap"

# When `bundle install` fails, bin/spindle's last line names the Gemfile the
# user can act on: an app's own, never the bundle Spindle wrote in tmp/ to
# serve the app under its gems. Run below a directory with someone else's
# Gemfile (bin/spindle bench/apps/hello.ru finds bench/Gemfile), the line
# also says how to serve with Spindle's own gems instead.
class BootstrapMessageTest < Minitest::Test
  Bootstrap = Spindle::Bootstrap
  OWN = Bootstrap::OWN_FILES.first

  def test_an_app_gemfile_is_named_with_the_way_back_to_ours
    message = Bootstrap.install_failed("/srv/app/Gemfile")
    assert_includes message, "`bundle install` for /srv/app/Gemfile failed"
    assert_includes message, "BUNDLE_GEMFILE=#{OWN}"
  end

  def test_our_own_gemfile_gets_no_hint_to_use_itself
    message = Bootstrap.install_failed(OWN)
    assert_includes message, "`bundle install` for #{OWN} failed"
    refute_includes message, "BUNDLE_GEMFILE="
  end
end
