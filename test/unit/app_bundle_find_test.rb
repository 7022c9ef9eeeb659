# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "spindle/boot/app_bundle"

# Which Gemfile bin/spindle (from a clone, outside any bundle) serves an app
# under: the app's own, found from the rackup file; never this checkout's.
class AppBundleFindTest < Minitest::Test
  AppBundle = Spindle::AppBundle
  ROOT = Spindle::Native::ROOT

  def setup
    @dir = Dir.mktmpdir("spfind")
    FileUtils.mkdir_p(File.join(@dir, "app", "config"))
    File.write(File.join(@dir, "app", "Gemfile"), "gem 'sinatra'\n")
    File.write(File.join(@dir, "app", "config.ru"), "run proc {}\n")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_the_gemfile_next_to_the_named_rackup_file
    assert_equal "#{@dir}/app/Gemfile", AppBundle.find(["-w", "2", "#{@dir}/app/config.ru"], dir: "/")
  end

  def test_a_gemfile_in_a_parent_directory
    File.write(File.join(@dir, "app", "config", "other.ru"), "run proc {}\n")
    assert_equal "#{@dir}/app/Gemfile", AppBundle.find(["config/other.ru"], dir: "#{@dir}/app")
  end

  def test_config_ru_in_the_current_directory
    assert_equal "#{@dir}/app/Gemfile", AppBundle.find([], dir: "#{@dir}/app")
  end

  def test_no_app_gemfile_for_our_examples_the_demo_or_a_bare_rackup_file
    assert_nil AppBundle.find(["#{ROOT}/examples/hello/config.ru"], dir: "/")
    assert_nil AppBundle.find([], dir: @dir) # no config.ru here: the demo
    File.write(File.join(@dir, "bare.ru"), "run proc {}\n")
    assert_nil AppBundle.find(["#{@dir}/bare.ru"], dir: "/") if AppBundle.nearest_gemfile(@dir).nil?
  end

  def test_the_written_gemfile_adds_this_clone_unless_the_app_names_it
    bundle = AppBundle.new(File.join(@dir, "app", "Gemfile"))
    text = File.read(bundle.write)
    assert_includes text, %(eval_gemfile "#{@dir}/app/Gemfile")
    assert_includes text, %(gem "spindle-server", path: "#{ROOT}")
    assert_match(/unless dependencies.any?/, text)
  ensure
    FileUtils.rm_rf(bundle.dir) if bundle
  end
end
