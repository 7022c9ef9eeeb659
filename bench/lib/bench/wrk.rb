# frozen_string_literal: true

require "json"
require "tempfile"
require_relative "cpu_sampler"

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

    def self.argv(url:, connections:, duration:, threads:, timeout:)
      raise ArgumentError, "not a loopback URL: #{url}" unless url.start_with?("http://127.0.0.1:")

      ["wrk", "-t", [threads, connections].min.to_s, "-c", connections.to_s, "-d", "#{duration}s",
       "--timeout", "#{timeout}s", "--latency", "-s", SCRIPT, url]
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

    # Polls wrk until it exits, sampling CPU between polls; bounded by the
    # run's duration plus a grace period. wrk is killed if it overstays, or if
    # we are interrupted (it runs in its own process group, out of Ctrl-C's reach).
    def wait(pid, sampler)
      deadline = now + @duration + GRACE
      until now > deadline
        sampler.sample
        _, status = Process.wait2(pid, Process::WNOHANG)
        return status if status

        sleep SAMPLE_EVERY
      end
      raise Failed, "wrk did not finish within #{@duration + GRACE} s"
    ensure
      kill(pid) unless status
    end

    def kill(pid)
      Process.kill(:KILL, -pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end

    def parse(output, status)
      line = output[/^BENCH_RESULT (\{.*\})$/, 1]
      raise Failed, "wrk exited #{status.exitstatus}: #{output.strip.lines.last(2).join(' ')}" unless line

      JSON.parse(line, symbolize_names: true)
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end
