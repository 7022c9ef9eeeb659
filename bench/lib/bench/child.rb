# frozen_string_literal: true

require "json"
require "io/wait"

module Bench
  # Waiting with a deadline, in one place: for a condition, and for a child
  # process the harness spawned in its own process group (wrk, a client, a
  # version probe). A child that overstays is killed with its whole group, so
  # nothing the harness started outlives its bound.
  module Child
    module_function

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    # The next line a client child reports on io, as JSON (symbol keys), or
    # nil when none came within timeout seconds or it was not JSON.
    def read_json(io, timeout)
      return nil unless io.wait_readable(timeout)

      line = io.gets or return nil
      JSON.parse(line, symbolize_names: true)
    rescue JSON::ParserError
      nil
    end

    # Polls the block until it returns a truthy value (returned) or the
    # deadline passes (nil): never a bare sleep.
    def wait_for(timeout, every: 0.25)
      deadline = now + timeout
      loop do
        value = yield
        return value if value
        return nil if now > deadline

        sleep every
      end
    end

    # Waits for pid up to timeout seconds, calling the block (if any) between
    # polls (a CPU or memory sampler). Returns its Process::Status, or nil
    # when it overstayed and was killed.
    def wait(pid, timeout, every: 0.1)
      deadline = now + timeout
      while now < deadline
        yield if block_given?
        _, status = Process.wait2(pid, Process::WNOHANG)
        return status if status

        sleep every
      end
      kill(pid)
      nil
    end

    # KILL to the child's process group, then reap it.
    def kill(pid)
      Process.kill(:KILL, -pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end
end
