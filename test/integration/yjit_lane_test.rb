# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/app_server"

# The Ruby 3.4 lane (bin/test-ruby3.4) runs the suite with YJIT on, on a Ruby
# built with it, and says so with SPINDLE_TEST_YJIT=1. A Ruby built without
# YJIT (Debian's) ignores RUBY_YJIT_ENABLE silently, and an environment a
# test cleans could drop it, so the lane would pass without YJIT: the
# servers' own start-up line is what shows it on.
class YjitLaneTest < SpindleIntegrationTest
  def setup
    skip "YJIT is expected in the Ruby 3.4 lane only (bin/test-ruby3.4 sets SPINDLE_TEST_YJIT=1)" unless
      ENV["SPINDLE_TEST_YJIT"] == "1"
  end

  # As the suite starts most servers: this environment, bin/spindle.
  def test_a_server_started_by_the_suite_runs_with_yjit
    process = spawn_server("-b", LOOPBACK, app_path("echo"))
    assert_match(/ yjit=on( |\z)/, process.start_line)
  end

  # As the app tests start them: `bundle exec spindle` in test/apps/sinatra,
  # in the environment a user's shell has (no BUNDLE_*, unsetenv_others), a
  # cluster. The app connects to its database on first use only.
  def test_a_cluster_started_with_an_apps_bundle_runs_with_yjit
    options = AppServer.spawn_options("sinatra", "DATABASE_URL" => "postgresql:///never-connected")
    process = CommandProcess.start(%w[bundle exec spindle], "-w", "2", "-b", LOOPBACK, **options)
    @processes << process
    assert_match(/ workers=2 .* yjit=on( |\z)/, process.start_line)
  end
end
