# frozen_string_literal: true

require "test_helper"
require "spindle/config"
require "spindle/request/health_check"

# The health path's answer, and the options that set it and the drain delay.
class HealthCheckTest < Minitest::Test
  Config = Spindle::Config

  def check = Spindle::HealthCheck.new("/healthz")

  def test_get_and_head_of_the_path_are_answered
    %w[GET HEAD].each do |method|
      assert_equal 200, check.response(env(method, "/healthz"), true).first
      assert_equal 503, check.response(env(method, "/healthz"), false).first
    end
  end

  def test_other_paths_and_methods_are_the_apps
    assert_nil check.response(env("POST", "/healthz"), true)
    assert_nil check.response(env("GET", "/healthz/"), true)
    assert_nil check.response(env("GET", "/HEALTHZ"), true)
    assert_nil check.response(env("GET", "/"), false)
  end

  def test_each_answer_has_headers_of_its_own
    first = check.response(env("GET", "/healthz"), true)
    first[1]["x-added-by-someone"] = "1"
    refute check.response(env("GET", "/healthz"), true)[1].key?("x-added-by-someone")
  end

  def test_no_check_without_a_path
    assert_nil Spindle::HealthCheck.for(nil)
  end

  def test_the_drain_delay_defaults_to_0_without_a_health_path_and_10_with_one
    assert_equal 0.0, Config.build({}).drain_delay
    assert_equal 10.0, Config.build({ health_path: "/up" }).drain_delay
    assert_equal 3.0, Config.build({ health_path: "/up", drain_delay: 3.0 }).drain_delay
    assert_equal 0.0, Config.build({ health_path: "/up", drain_delay: 0.0 }).drain_delay
  end

  def test_the_options_check_their_values
    assert_equal "/up", Config::Coerce.health_path("/up")
    ["up", "/a b", "/a?b", "/a#b", "/\x01", ""].each do |bad|
      assert_raises(Config::Error, bad.inspect) { Config::Coerce.health_path(bad) }
    end
    assert_equal 0.0, Config::Coerce.non_negative_seconds("0", "drain_delay")
    assert_equal 2.5, Config::Coerce.non_negative_seconds("2.5", "drain_delay")
    %w[-1 abc Infinity NaN].each do |bad|
      assert_raises(Config::Error, bad) { Config::Coerce.non_negative_seconds(bad, "drain_delay") }
    end
  end

  private

  def env(method, path) = { "REQUEST_METHOD" => method, "PATH_INFO" => path }
end
