# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# --ruby 3.4 (3.3) hands the run to bin/test-ruby3.4's (3.3's) chroot with YJIT on; every
# Ruby server then gets RUBY_YJIT_ENABLE=1, and a scenario's own Gemfile.
class LaneTest < Minitest::Test
  def teardown
    Bench::Lane.yjit = false
  end

  def test_another_ruby_turns_yjit_on_unless_told_otherwise
    other = (Bench::Lane::CHROOTS.keys - [Bench::Lane::HERE]).first or
      skip "on Ruby #{Bench::Lane::HERE} (the chroot's own), --ruby names no other Ruby"
    assert_equal [other, true], Bench::Options.parse(["rails", "--ruby", other]).to_h.values_at(:ruby, :yjit)
    refute Bench::Options.parse(["rails", "--ruby", other, "--no-yjit"]).yjit
    refute Bench::Options.parse(%w[rails]).yjit
    assert Bench::Options.parse(%w[rails --yjit]).yjit
    assert_raises(OptionParser::InvalidArgument) { Bench::Options.parse(%w[rails --ruby 2.7]) }
  end

  def test_the_chroot_runs_the_same_command_without_ruby_and_with_yjit_said
    env, argv = Bench::Lane.command("3.3", %w[rails --ruby 3.3 --quick --servers spindle-*,puma], yjit: true)
    assert_equal({ "SPINDLE_RUBY33_SCRIPT" => "bench/run", "SPINDLE_RUBY33_YJIT" => "1" }, env)
    assert_equal [File.join(Bench::Paths::ROOT, "bin/test-ruby3.3"), "rails", "--quick", "--servers", "spindle-*,puma", "--yjit"], argv
    env, argv = Bench::Lane.command("3.3", %w[blog --ruby=3.3], yjit: false)
    assert_equal %w[blog --no-yjit], argv.drop(1)
    assert_nil env["SPINDLE_RUBY33_YJIT"], "Debian's ruby3.3 without YJIT"
  end

  # Each lane's own settings, as bin/test-ruby reads them (SPINDLE_RUBY34_*),
  # and its own chroot's lock to wait on.
  def test_the_3_4_lane_is_told_by_its_own_settings
    env, argv = Bench::Lane.command("3.4", %w[rails8 --ruby 3.4 --quick], yjit: true)
    assert_equal({ "SPINDLE_RUBY34_SCRIPT" => "bench/run", "SPINDLE_RUBY34_YJIT" => "1" }, env)
    assert_equal [File.join(Bench::Paths::ROOT, "bin/test-ruby3.4"), "rails8", "--quick", "--yjit"], argv
    assert_equal "/var/cache/spindle/trixie-ruby3.4", Bench::Lane.chroot("3.4") unless ENV["SPINDLE_RUBY34_CHROOT"]
    assert_equal "/var/cache/spindle/trixie-ruby3.3", Bench::Lane.chroot("3.3") unless ENV["SPINDLE_RUBY33_CHROOT"]
  end

  # Built, not started (the real blog's env would start PostgreSQL).
  def server(name, gemfile: nil, yjit: false)
    Bench::Lane.yjit = yjit
    scenario = Bench::Scenario.new(name: "lane-test", app: "blog.ru", gemfile: gemfile)
    Bench::ServerProcess.new(Bench::Launch.new(spec: Bench::SERVERS.fetch(name), scenario: scenario, port: 1,
                                               threads: 5, processes: 1))
  end

  def test_yjit_is_on_for_every_server_or_for_none
    assert_equal %w[1 1], %w[spindle-threads puma].map { |n| server(n, yjit: true).env["RUBY_YJIT_ENABLE"] }
    assert_equal [nil, nil], %w[spindle-threads puma].map { |n| server(n).env["RUBY_YJIT_ENABLE"] }
  end

  def test_a_scenario_gemfile_is_the_bundle_of_spindle_and_peers_alike
    apps = Bench::Paths::APPS_GEMFILE
    assert_equal [apps, apps], %w[spindle-fibers falcon].map { |n| server(n, gemfile: apps).env["BUNDLE_GEMFILE"] }
    assert_equal [Bench::Paths::SERVER_GEMFILE, Bench::Paths::GEMFILE], %w[spindle-fibers falcon].map { |n| server(n).env["BUNDLE_GEMFILE"] }
  end
end
