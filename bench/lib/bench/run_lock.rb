# frozen_string_literal: true

require "fileutils"
require "timeout"
require_relative "paths"
require_relative "log"

module Bench
  # One measuring bench/run at a time on this machine: two runs at once
  # would share the same two cores and corrupt each other's figures. A second
  # run waits (bounded) for the first to finish, then measures.
  module RunLock
    PATH = File.join(Paths::TMP, "bench-run.lock")

    module_function

    # Holds the lock for the duration of the block; aborts after wait_minutes.
    def hold(wait_minutes:)
      FileUtils.mkdir_p(Paths::TMP)
      File.open(PATH, File::RDWR | File::CREAT) do |lock|
        acquire(lock, wait_minutes)
        lock.truncate(0)
        lock.write("#{Process.pid} #{ARGV.join(' ')}\n")
        lock.flush
        yield
      end
    end

    # A blocking flock queues us with the kernel like any other waiter (a
    # polling try-lock would starve behind them); Timeout bounds the wait.
    def acquire(lock, wait_minutes)
      return if lock.flock(File::LOCK_EX | File::LOCK_NB)

      Log.info("waiting for another bench/run to finish (#{File.read(PATH).strip})")
      Timeout.timeout(wait_minutes * 60) { lock.flock(File::LOCK_EX) }
    rescue Timeout::Error
      abort "bench: another bench/run still holds #{Paths.relative(PATH)} after #{wait_minutes} min"
    end
  end
end
