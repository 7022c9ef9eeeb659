# frozen_string_literal: true

require "json"
require "tempfile"
require_relative "cpu_sampler"
require_relative "child"

module Bench
  # The harness's one wrk runner: against 127.0.0.1, always with
  # wrk_report.lua's exact figures (or a script that prints them too). #run
  # waits for it in the foreground, with the server's CPU sampled meanwhile
  # when a server_pid is given; #spawn leaves it in the background for a
  # caller that stops it itself (INT makes wrk print its figures). The
  # caller decides what the figures mean.
  class Wrk
    class Failed < StandardError; end

    SCRIPT = File.join(__dir__, "wrk_report.lua")
    SAMPLE_EVERY = 0.2
    GRACE = 20 # seconds past the run's duration before wrk is killed

    Run = Struct.new(:argv, :result, :usage, keyword_init: true)

    # script: another Lua script, which must print the same BENCH_RESULT line
    # as wrk_report.lua (plus whatever it adds to that JSON).
    # headers: extra request headers ("Connection: close").
    def self.argv(url:, connections:, duration:, threads:, timeout:, script: SCRIPT, script_args: [], headers: [])
      raise ArgumentError, "not a loopback URL: #{url}" unless url.match?(%r{\Ahttps?://127\.0\.0\.1:}) # https: the tls scenario

      ["wrk", "-t", [threads, connections].min.to_s, "-c", connections.to_s, "-d", "#{duration}s",
       "--timeout", "#{timeout}s", *headers.flat_map { |h| ["-H", h] }, "--latency", "-s", script, url,
       *(script_args.empty? ? [] : ["--", *script_args.map(&:to_s)])]
    end

    attr_reader :argv

    def initialize(server_pid:, **argv_options)
      @argv = self.class.argv(**argv_options)
      @duration = argv_options.fetch(:duration)
      @server_pid = server_pid
    end

    def run
      Tempfile.create("bench-wrk") do |out|
        pid = spawn(out)
        sampler = @server_pid && CpuSampler.new(wrk_pid: pid, server_pid: @server_pid)
        status = wait(pid, sampler)
        out.rewind
        Run.new(argv: @argv, result: self.class.parse(out.read, status), usage: sampler&.usage)
      end
    end

    # The pid of wrk, started in its own process group, writing to out.
    def spawn(out) = Process.spawn(*@argv, out: out, err: out, in: File::NULL, pgroup: true)

    # wrk_report.lua's figures from wrk's output.
    def self.parse(output, status = nil)
      line = output[/^BENCH_RESULT (\{.*\})$/, 1]
      raise Failed, "wrk exited #{status&.exitstatus.inspect}: #{output.strip.lines.last(2).join(' ')}" unless line

      JSON.parse(line, symbolize_names: true)
    end

    private

    # Samples CPU between polls until wrk exits; bounded by the run's duration
    # plus a grace period (wrk runs in its own process group, out of Ctrl-C's
    # reach, so it is killed if we are interrupted too).
    def wait(pid, sampler)
      status = Child.wait(pid, @duration + GRACE, every: SAMPLE_EVERY) { sampler&.sample }
      status or raise Failed, "wrk did not finish within #{@duration + GRACE} s"
    ensure
      Child.kill(pid) unless status
    end
  end
end
