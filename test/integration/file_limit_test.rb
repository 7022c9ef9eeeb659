# frozen_string_literal: true

require "rbconfig"
require_relative "../support/spindle_process"

# Every connection is a file descriptor, so a serving process raises its soft
# open-file limit to the hard one, however it was started: bin/spindle, and
# the rackup handler (`rackup -s spindle`), which does not pass through the CLI.
class FileLimitTest < SpindleIntegrationTest
  SOFT = 256

  def test_bin_spindle_raises_the_soft_limit_to_the_hard_limit
    app = spawn_server("-b", LOOPBACK, app_path("echo"), rlimit_nofile: [SOFT, hard_limit])
    assert_equal [hard_limit, hard_limit], open_file_limits(app.pid)
  end

  def test_the_rackup_handler_raises_the_soft_limit_to_the_hard_limit
    skip "the hard limit is #{hard_limit}: nothing to raise" if hard_limit <= SOFT

    pid, output = spawn_rackup
    line = wait_for_start(output)
    assert line, "rackup printed no start-up line"
    assert_equal [hard_limit, hard_limit], open_file_limits(pid)
  ensure
    if pid
      Process.kill(:KILL, -pid)
      Process.wait(pid)
    end
  end

  private

  def hard_limit = Process.getrlimit(:NOFILE).last

  # [soft, hard] from /proc/PID/limits.
  def open_file_limits(pid)
    File.read("/proc/#{pid}/limits")[/^Max open files\s+(\d+)\s+(\d+)/].then do
      [Integer(Regexp.last_match(1)), Integer(Regexp.last_match(2))]
    end
  end

  def spawn_rackup
    rackup = Gem.bin_path("rackup", "rackup")
    out_r, out_w = IO.pipe
    env = { "RUBYOPT" => "#{ENV['RUBYOPT']} -I#{File.join(SpindleProcess::ROOT, 'lib')}" } # keeps bin/test's Bundler setup
    pid = Process.spawn(env, RbConfig.ruby, rackup, "-s", "spindle", "-o", "127.0.0.1", "-p", "0", app_path("echo"),
                        out: out_w, err: out_w, pgroup: true, rlimit_nofile: [SOFT, hard_limit])
    out_w.close
    [pid, out_r]
  end

  # The start-up line, or nil if none came within the deadline. The serving
  # process sets its limit before it prints it.
  def wait_for_start(io, deadline: SpindleProcess::START_DEADLINE)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    seen = +""
    until (line = seen[SpindleProcess::START_LINE])
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return nil if remaining <= 0 || !io.wait_readable(remaining)

      seen << (io.read_nonblock(4096, exception: false).then { |d| d.is_a?(String) ? d : "" })
    end
    line
  end
end
