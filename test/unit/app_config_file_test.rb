# frozen_string_literal: true

require "test_helper"
require "spindle/cli"
require "spindle/rack_handler"
require "tmpdir"
require "fileutils"

# An app's config/spindle.rb is read without -C, as Puma reads config/puma.rb:
# by bin/spindle (and `bundle exec spindle`) and by the rackup handler (`rails
# server -u spindle`). test/integration/rails_app_test.rb runs both for real.
class AppConfigFileTest < Minitest::Test
  Config = Spindle::Config

  def setup
    @dir = Dir.mktmpdir("spindle-app")
    File.write(File.join(@dir, "config.ru"), "run ->(_) { [200, {}, []] }\n")
    FileUtils.mkdir_p(File.join(@dir, "config"))
    @file = File.join(@dir, "config", "spindle.rb")
    File.write(@file, "engine :blocking\nworkers 3\n")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_the_cli_reads_the_config_file_beside_the_rackup_file
    config = Config.build(Spindle::CLI.new.parse([File.join(@dir, "config.ru")]))
    assert_equal "blocking", config.engine
    assert_equal 3, config.workers
  end

  def test_the_cli_reads_it_for_the_config_ru_of_the_working_directory
    values = Dir.chdir(@dir) { Spindle::CLI.new.parse([]) }
    assert_equal @file, values[:config_file]
  end

  def test_flags_win_over_it
    config = Config.build(Spindle::CLI.new.parse(["--engine", "fibers", File.join(@dir, "config.ru")]))
    assert_equal "fibers", config.engine
    assert_equal 3, config.workers
  end

  def test_an_explicit_config_file_is_read_instead
    other = File.join(@dir, "other.rb")
    File.write(other, "threads 1, 2\n")
    config = Config.build(Spindle::CLI.new.parse(["-C", other, File.join(@dir, "config.ru")]))
    assert_equal "threads", config.engine, "config/spindle.rb is not read when -C names a file"
    assert_equal [1, 2], config.threads
  end

  def test_no_file_no_change
    File.delete(@file)
    refute Spindle::CLI.new.parse([File.join(@dir, "config.ru")]).key?(:config_file)
  end

  def test_the_rackup_handler_reads_it_for_rackups_config_ru
    config = Spindle::RackHandler.build_config(config: File.join(@dir, "config.ru"), Host: "127.0.0.1", Port: 0)
    assert_equal "blocking", config.engine
    assert_equal 3, config.workers
    assert_equal ["tcp://127.0.0.1:0"], config.binds, "rails server's -b and -p apply when the file has no bind"
  end

  # rails server passes it always; it was refused as an unknown -O option.
  def test_the_rackup_handler_takes_what_rails_server_passes
    config = Spindle::RackHandler.build_config(config: File.join(@dir, "config.ru"), Host: "127.0.0.1", Port: 3000,
                                               DoNotReverseLookup: true, user_supplied_options: [])
    assert_equal "blocking", config.engine
  end

  def test_a_port_typed_to_rails_server_wins_over_the_files_bind
    File.write(@file, "bind 'tcp://127.0.0.1:4000'\n")
    options = { config: File.join(@dir, "config.ru"), Host: "127.0.0.1", Port: 3000 }
    assert_equal ["tcp://127.0.0.1:4000"], Spindle::RackHandler.build_config(options).binds
    typed = Spindle::RackHandler.build_config(options.merge(user_supplied_options: [:Port]))
    assert_equal ["tcp://127.0.0.1:3000"], typed.binds
  end

  def test_the_rackup_handler_takes_o_config_instead
    other = File.join(@dir, "other.rb")
    File.write(other, "engine :hybrid\n")
    config = Spindle::RackHandler.build_config(config: File.join(@dir, "config.ru"), Config: other)
    assert_equal "hybrid", config.engine
    assert_equal 0, config.workers
  end
end
