# frozen_string_literal: true

# Loaded into a server process by RUBYOPT (bench/run rails --profile, see
# Bench::Profile): it does nothing until the harness asks. A thread polls
# BENCH_PROFILE_DIR: once `go` exists it starts StackProf (CPU mode, raw
# stacks) in this process, once `stop` exists it stops and writes PID.json,
# the samples split by Bench::ProfileSplit. Forked processes (workers, molds)
# poll again: threads do not survive fork, so Process._fork re-arms them.
# Nothing here runs unless RUBYOPT names this file, and the harness only
# sets it for a profiling run, whose throughput it does not report.
require "json"
require_relative "profile_split"

module BenchProfileHook
  DIR = ENV.fetch("BENCH_PROFILE_DIR")
  POLL = 0.1
  MAX_S = 600 # the watcher gives up after this long, profiled or not

  module_function

  def arm
    Thread.new do
      Thread.current.name = "bench-profile"
      watch
    rescue StandardError => e
      File.write(File.join(DIR, "#{Process.pid}.error"), "#{e.class}: #{e.message}")
    end
  end

  # One window per connection count: `go`, `stop`, then the harness removes
  # both (and the results) before the next `go`.
  def watch
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + MAX_S
    while wait_for(deadline) { present?("go") && !present?("stop") }
      window(deadline)
      wait_for(deadline) { !present?("go") && !present?("stop") } or break
    end
  end

  def window(deadline)
    require "stackprof" # the bundle is set up by now
    StackProf.start(mode: :cpu, interval: 1000, raw: true)
    File.write(File.join(DIR, "#{Process.pid}.started"), "")
    wait_for(deadline) { present?("stop") }
    StackProf.stop
    split = Bench::ProfileSplit.split(StackProf.results)
    File.write(File.join(DIR, "#{Process.pid}.json"), JSON.generate(split.merge(pid: Process.pid, cmd: $PROGRAM_NAME)))
  end

  def present?(name) = File.exist?(File.join(DIR, name))

  def wait_for(deadline)
    sleep POLL until yield || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    yield
  end

  # In the child of every fork (Ruby >= 3.1 calls Process._fork for fork,
  # Process.fork and Kernel#fork alike).
  module Rearm
    def _fork
      pid = super
      BenchProfileHook.arm if pid.zero?
      pid
    end
  end
end

Process.singleton_class.prepend(BenchProfileHook::Rearm)
BenchProfileHook.arm
