# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require_relative "../lib/bench/run_lock"

# The one bench lock: bounded, and it names its holder.
class RunLockTest < Minitest::Test
  def setup
    @dir = Dir.mktmpdir("bench-lock")
    @path = File.join(@dir, "run.lock")
  end

  def teardown = FileUtils.rm_rf(@dir)

  # Another open file description holding the flock stands for another bench/run.
  def held_elsewhere(text)
    other = File.open(@path, File::RDWR | File::CREAT)
    other.flock(File::LOCK_EX)
    other.write(text)
    other.flush
    other
  end

  def test_a_free_lock_runs_the_block_and_names_this_run_while_it_holds
    seen = Bench::RunLock.hold(wait_s: 0, path: @path, label: "bench/run hello") { File.read(@path) }
    assert_match(/\Apid #{Process.pid} in .* since \d\d:\d\d:\d\d: bench\/run hello\n\z/, seen)
    assert_empty File.read(@path), "a released lock names nobody"
  end

  def test_a_held_lock_is_waited_for_only_until_the_deadline_and_names_the_holder
    other = held_elsewhere("pid 4242 in /elsewhere since 01:02:03: bench/run all")
    ran = false
    error = nil
    _, err = capture_io do
      error = assert_raises(Bench::RunLock::Busy) { Bench::RunLock.hold(wait_s: 0.2, path: @path, label: "second") { ran = true } }
    end
    refute ran
    assert_match(/waiting up to 0 s for the bench lock, held by pid 4242/, err)
    assert_match(/still held after 0 s by pid 4242 in \/elsewhere since 01:02:03: bench\/run all/, error.message)
  ensure
    other&.close
  end

  def test_the_lock_is_taken_once_the_holder_lets_go
    other = held_elsewhere("pid 4242: bench/run all")
    release = Thread.new { sleep 0.1; other.close } # the first run ends while the second waits
    capture_io { assert_equal :ran, Bench::RunLock.hold(wait_s: 30, path: @path, label: "second") { :ran } }
  ensure
    release&.join
  end
end
