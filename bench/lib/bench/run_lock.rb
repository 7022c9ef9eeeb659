# frozen_string_literal: true

require "tmpdir"
require_relative "log"
require_relative "child"

module Bench
  # One measuring bench/run at a time on this machine: two runs at once would
  # share the same cores and corrupt each other's figures. The lock file is
  # machine-wide (the system's tmp dir, not bench/tmp/), because every checkout
  # of the repository (git worktrees) measures on the same cores. A second run
  # waits for the first up to a deadline, saying who holds the lock, and then
  # gives up (RunLock::Busy) rather than wait forever behind a stuck run.
  class RunLock
    class Busy < StandardError; end

    PATH = File.join(Dir.tmpdir, "spindle-bench-run.lock")
    POLL_S = 1.0

    def self.hold(wait_s:, path: PATH, label: "bench/run #{ARGV.join(' ')}", &block)
      new(path, label).hold(wait_s, &block)
    end

    def initialize(path, label)
      @path = path
      @label = label
    end

    # Holds the lock for the duration of the block; raises Busy when another
    # process still holds it wait_s seconds from now.
    def hold(wait_s)
      File.open(@path, File::RDWR | File::CREAT, 0o644) do |file|
        acquire(file, wait_s)
        file.truncate(0)
        file.write("pid #{Process.pid} in #{Dir.pwd} since #{Time.now.strftime('%H:%M:%S')}: #{@label}\n")
        file.flush
        begin
          yield
        ensure
          file.truncate(0) # the next waiter must not name a run that has ended
        end
      end
    end

    private

    def acquire(file, wait_s)
      deadline = Child.now + wait_s
      waited = false
      until file.flock(File::LOCK_EX | File::LOCK_NB)
        raise Busy, "#{@path} still held after #{wait_s.round} s by #{holder}" if Child.now >= deadline

        Log.info("waiting up to #{wait_s.round} s for the bench lock, held by #{holder}") unless waited
        waited = true
        sleep [POLL_S, deadline - Child.now].min.clamp(0.01, POLL_S)
      end
    end

    def holder
      text = File.read(@path).strip
      text.empty? ? "a process that has not said who it is" : text
    end

  end
end
