# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"
require_relative "spindle_process"

# Runs bin/spindle as `nobody` from a root-owned copy of this checkout, the way
# an app user meets a clone an administrator made: it may read everything and
# write nothing. Needs root (to own the copy and to switch users) and runuser.
module Unprivileged
  USER = "nobody"
  # What bin/spindle reads: the code, the gem files, the built extension and
  # the bundle stamp (tmp/), and an app to serve.
  PARTS = %w[bin lib ext tmp examples Gemfile Gemfile.lock spindle-server.gemspec].freeze

  module_function

  def available?
    Process.euid.zero? && system("runuser", "-u", USER, "--", "true", out: File::NULL, err: File::NULL)
  end

  # A world-readable, root-owned copy. Mtimes are kept, so the extension and
  # the bundle stamp are as fresh as in this checkout; bin/spindle -v as root
  # first makes sure both are (the owner has run it once).
  def copy_checkout
    dir = Dir.mktmpdir("spu")
    File.chmod(0o755, dir)
    PARTS.each { |part| FileUtils.cp_r(File.join(SpindleProcess::ROOT, part), dir, preserve: true) }
    FileUtils.rm_rf(Dir[File.join(dir, "tmp", "ext", "*", ".lock")])
    _, status = Open3.capture2e(environment(dir), RbConfig.ruby, File.join(dir, "bin", "spindle"), "-v")
    raise "bin/spindle -v failed as root in #{dir}" unless status.success?

    FileUtils.chmod_R("go-w", dir)
    dir
  end

  # Runs bin/spindle from checkout as USER until it exits or the deadline;
  # returns [stdout, stderr, Process::Status or nil].
  def run(checkout, *args, deadline: SpindleProcess::EXIT_DEADLINE)
    Open3.popen3(environment(checkout), *command(checkout, args), chdir: "/", pgroup: true) do |stdin, out, err, waiter|
      stdin.close
      readers = [Thread.new { out.read }, Thread.new { err.read }]
      status = waiter.join(deadline)&.value
      kill(waiter.pid) unless status
      [readers[0].value, readers[1].value, status]
    end
  end

  # Starts bin/spindle as USER and waits for its start-up line; yields the
  # line, then kills the process group.
  def serve(checkout, *args, deadline: SpindleProcess::START_DEADLINE)
    Open3.popen2e(environment(checkout), *command(checkout, args), chdir: "/", pgroup: true) do |stdin, output, waiter|
      stdin.close
      yield wait_for_start(output, waiter, deadline)
    ensure
      kill(waiter.pid)
    end
  end

  # bin/test's Bundler setup (RUBYOPT, BUNDLE_GEMFILE) would load this
  # checkout's code instead of the copy's.
  def environment(checkout)
    { "BUNDLE_GEMFILE" => File.join(checkout, "Gemfile"), "RUBYOPT" => nil, "RUBYLIB" => nil }
  end

  def command(checkout, args)
    ["runuser", "-u", USER, "--", RbConfig.ruby, File.join(checkout, "bin", "spindle"), *args.map(&:to_s)]
  end

  def wait_for_start(output, waiter, deadline)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    seen = +""
    until (match = SpindleProcess::START_LINE.match(seen))
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return "no start-up line within #{deadline}s:\n#{seen}" if remaining <= 0 || !output.wait_readable(remaining)

      data = output.read_nonblock(4096, exception: false)
      return "no start-up line; exited #{waiter.value.inspect}:\n#{seen}" if data.nil?

      seen << data if data.is_a?(String)
    end
    match[0]
  end

  def kill(pid)
    Process.kill(:KILL, -pid)
  rescue Errno::ESRCH, Errno::EPERM
    nil
  end
end
