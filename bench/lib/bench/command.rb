# frozen_string_literal: true

require "tempfile"

module Bench
  # Runs a short command to completion with a deadline, capturing its output
  # (stdout and stderr together). Used for version probes and bootstraps, never
  # for servers or wrk, which have their own lifecycles.
  module Command
    Result = Struct.new(:ok, :output, keyword_init: true)

    module_function

    def capture(env, argv, timeout:, chdir: Dir.pwd)
      Tempfile.create("bench-cmd") do |out|
        pid = Process.spawn(env, *argv, chdir: chdir, out: out, err: out, in: File::NULL, pgroup: true)
        status = wait(pid, timeout)
        out.rewind
        Result.new(ok: status&.success? || false, output: out.read)
      end
    rescue SystemCallError => e
      Result.new(ok: false, output: e.message)
    end

    # Waits for pid until the deadline; past it, kills the command's own
    # process group and returns nil.
    def wait(pid, timeout)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        _, status = Process.wait2(pid, Process::WNOHANG)
        return status if status
        break if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.05
      end
      Process.kill(:KILL, -pid)
      Process.wait(pid)
      nil
    end
  end
end
