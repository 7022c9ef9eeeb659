# frozen_string_literal: true

require "tempfile"
require_relative "child"

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
        status = Child.wait(pid, timeout, every: 0.05)
        out.rewind
        Result.new(ok: status&.success? || false, output: out.read)
      end
    rescue SystemCallError => e
      Result.new(ok: false, output: e.message)
    end
  end
end
