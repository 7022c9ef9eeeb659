# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/fake_cluster"
require "spindle/process/restart_file"

# --restart-file without the file system: the mtime port returns what the
# test sets, and FakeCluster's clock says when a poll is due.
class RestartFileTest < Minitest::Test
  def setup
    @clock = FakeCluster::Clock.new
    @mtime = Time.at(1_000)
    @file = Spindle::RestartFile.new("tmp/restart.txt", mtime: ->(_path) { @mtime }, clock: @clock)
  end

  def poll
    @clock.advance(Spindle::RestartFile::INTERVAL)
    @file.changed?
  end

  def test_unchanged_is_no_change
    refute poll
    refute poll
  end

  def test_a_touch_is_one_change
    @mtime = Time.at(1_001)
    assert poll
    refute poll
    @mtime = Time.at(1_002)
    assert poll
  end

  def test_looked_at_once_per_interval
    @mtime = Time.at(1_001)
    refute @file.changed?, "the first look is an interval after the start"
    @clock.advance(Spindle::RestartFile::INTERVAL / 2)
    refute @file.changed?
    @clock.advance(Spindle::RestartFile::INTERVAL / 2)
    assert @file.changed?
  end

  def test_a_file_that_appears_counts_and_one_that_disappears_does_not
    @mtime = nil
    file = Spindle::RestartFile.new("tmp/restart.txt", mtime: ->(_path) { @mtime }, clock: @clock)
    @clock.advance(1)
    refute file.changed?
    @mtime = Time.at(1_003)
    @clock.advance(1)
    assert file.changed?
    @mtime = nil
    @clock.advance(1)
    refute file.changed?
  end

  def test_the_real_file
    Dir.mktmpdir do |dir|
      path = File.join(dir, "restart.txt")
      file = Spindle::RestartFile.new(path, clock: @clock)
      File.write(path, "")
      File.utime(Time.at(5_000), Time.at(5_000), path)
      @clock.advance(1)
      assert file.changed?
    end
  end
end
