# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# RUBY_YJIT_ENABLE=1 only asks for YJIT (Debian's ruby3.3 ignores it): a
# record says YJIT on when the binary each Ruby server runs said
# RubyVM::YJIT.enabled? under that variable, for every one of them.
class YjitCheckTest < Minitest::Test
  def setup
    Bench::YjitCheck.reset
    @pids = []
  end

  def teardown
    @pids.each do |pid|
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
    Bench::Lane.yjit = false
  end

  # A Ruby process standing in for a server: spawn returns once it has exec'd.
  # Without the variable unless env gives it: the Ruby 3.4 lane runs these
  # tests with RUBY_YJIT_ENABLE=1 (docs/TESTING.md).
  def check(name, env)
    pid = Process.spawn({ "RUBYOPT" => nil, "RUBY_YJIT_ENABLE" => nil }.merge(env), RbConfig.ruby, "-e", "sleep 60",
                        in: File::NULL)
    @pids << pid
    Bench::YjitCheck.server(name, pid)
  end

  def here = File.realpath(RbConfig.ruby)

  def test_the_server_s_own_binary_and_variable_decide
    check("off", {})
    check("asked", { "RUBY_YJIT_ENABLE" => "1" })
    assert_equal({ ruby: here, enabled: false }, Bench::YjitCheck.servers["off"])
    assert_equal({ ruby: here, enabled: Bench::YjitCheck.enabled?(RbConfig.ruby) }, Bench::YjitCheck.servers["asked"])
  end

  def test_one_start_without_it_turns_that_server_off
    check("puma", { "RUBY_YJIT_ENABLE" => "1" })
    check("puma", {})
    check("puma", { "RUBY_YJIT_ENABLE" => "1" })
    refute Bench::YjitCheck.servers["puma"][:enabled]
  end

  def test_the_record_says_on_only_when_every_server_had_it
    Bench::Lane.yjit = true
    refute Bench::Machine.yjit[:enabled_for_servers], "no server checked: not on"
    check("spindle-blocking", { "RUBY_YJIT_ENABLE" => "1" })
    assert_equal Bench::YjitCheck.enabled?(RbConfig.ruby), Bench::Machine.yjit[:enabled_for_servers]
    check("puma", {})
    refute Bench::Machine.yjit[:enabled_for_servers]
  end
end
