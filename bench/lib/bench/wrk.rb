# frozen_string_literal: true

require "json"
require "tempfile"
require_relative "cpu_sampler"
require_relative "child"

module Bench
  # One wrk run against 127.0.0.1, with CPU sampled while it runs. Returns
  # wrk's own figures (from wrk_report.lua) and the CPU usage; the caller
  # decides what they mean.
  class Wrk
    class Failed < StandardError; end

    SCRIPT = File.join(__dir__, "wrk_report.lua")
    SAMPLE_EVERY = 0.2
    GRACE = 20 # seconds past the run's duration before wrk is killed

    Run = Struct.new(:argv, :result, :usage, keyword_init: true)

    # script: another Lua script, which must print the same BENCH_RESULT line
    # as wrk_report.lua (plus whatever it adds to that JSON).
    def self.argv(url:, connections:, duration:, threads:, timeout:, script: SCRIPT, script_args: [])
      raise ArgumentError, "not a loopback URL: #{url}" unless url.start_with?("http://127.0.0.1:")

      ["wrk", "-t", [threads, connections].min.to_s, "-c", connections.to_s, "-d", "#{duration}s",
       "--timeout", "#{timeout}s", "--latency", "-s", script, url,
       *(script_args.empty? ? [] : ["--", *script_args.map(&:to_s)])]
    end

    def initialize(server_pid:, **argv_options)
      @argv = self.class.argv(**argv_options)
      @duration = argv_options.fetch(:duration)
      @server_pid = server_pid
    end

    def run
      Tempfile.create("bench-wrk") do |out|
        pid = Process.spawn(*@argv, out: out, err: out, in: File::NULL, pgroup: true)
        sampler = CpuSampler.new(wrk_pid: pid, server_pid: @server_pid)
        status = wait(pid, sampler)
        out.rewind
        Run.new(argv: @argv, result: parse(out.read, status), usage: sampler.usage)
      end
    end

    private

    # Samples CPU between polls until wrk exits; bounded by the run's duration
    # plus a grace period (wrk runs in its own process group, out of Ctrl-C's
    # reach, so it is killed if we are interrupted too).
    def wait(pid, sampler)
      status = Child.wait(pid, @duration + GRACE, every: SAMPLE_EVERY) { sampler.sample }
      status or raise Failed, "wrk did not finish within #{@duration + GRACE} s"
    ensure
      Child.kill(pid) unless status
    end

    def parse(output, status)
      line = output[/^BENCH_RESULT (\{.*\})$/, 1]
      raise Failed, "wrk exited #{status.exitstatus}: #{output.strip.lines.last(2).join(' ')}" unless line

      JSON.parse(line, symbolize_names: true)
    end
  end
end
