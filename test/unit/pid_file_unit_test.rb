# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require "stringio"
require "rbconfig"
require "spindle/log"
require "spindle/ops/pid_file"
require_relative "../support/waiting"

# PidFile in-process, against real files and real processes.
class PidFileUnitTest < Minitest::Test
  include Waiting

  def setup
    @dir = Dir.mktmpdir("spu")
    @path = File.join(@dir, "app.pid")
    @out = StringIO.new
    @file = Spindle::PidFile.new(@path, Spindle::Log.new(out: @out, err: @out))
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_write_replaces_the_file_whole_and_leaves_no_temporary
    File.write(@path, "garbage that is longer than a pid\n")
    @file.write
    assert_equal "#{Process.pid}\n", File.read(@path)
    assert_equal ["app.pid"], Dir.children(@dir)
  end

  def test_remove_only_while_it_holds_our_pid
    File.write(@path, "1\n")
    @file.remove
    assert File.exist?(@path), "a file naming another process is left alone"
    @file.write
    @file.remove
    refute File.exist?(@path)
    @file.remove # no file: nothing to do, no error
  end

  # A live process whose title says Spindle, as a master's does.
  def test_check_refuses_a_live_spindle_and_allows_the_predecessor
    spindle = Process.spawn(RbConfig.ruby, "-e", "Process.setproctitle('spindle master'); sleep 30")
    wait_for_title(spindle)
    File.write(@path, "#{spindle}\n")
    error = assert_raises(Spindle::PidFile::Error) { @file.check! }
    assert_match(/names pid #{spindle}, a Spindle process that is still running/, error.message)
    @file.check!(predecessor: spindle) # a hot restart's new master may replace it
  ensure
    Process.kill(:KILL, spindle)
    Process.wait(spindle)
  end

  def test_check_replaces_a_dead_pid_and_garbage
    dead = Process.spawn("true")
    Process.wait(dead)
    File.write(@path, "#{dead}\n")
    @file.check!
    assert_match(/names pid #{dead}, which is gone/, @out.string)
    File.write(@path, "not a pid\n")
    @file.check!
  end

  def test_an_unwritable_directory_is_an_error_naming_the_path
    file = Spindle::PidFile.new(File.join(@dir, "missing", "app.pid"), Spindle::Log.new(out: @out, err: @out))
    error = assert_raises(Spindle::PidFile::Error) { file.write }
    assert_match(/cannot write pid file .*missing/, error.message)
  end

  private

  def wait_for_title(pid)
    wait_until("the child sets its title") { File.binread("/proc/#{pid}/cmdline").start_with?("spindle master") }
  end
end
