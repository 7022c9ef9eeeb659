# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require_relative "../paths"
require_relative "open_loop"

module Bench
  class OpenLoop
    # Bench::OpenLoop's schedule, timeouts and result, from a C process
    # (open_loop.c: one thread, epoll): the Ruby client costs 0.3-0.6 core
    # at 1,000 req/s on cores it shares with the server under test, and
    # cannot hold ~12,000 req/s at all. Same keywords, same Result; built
    # with gcc into bench/tmp/ the first time, and again when the source is
    # newer than the binary. The bench process only waits while it runs.
    class Native
      SOURCE = File.join(__dir__, "open_loop.c")
      # One per lane: a binary built in the 3.3/3.4 chroots (a newer glibc)
      # need not run on the host.
      BINARY = File.join(Paths::TMP, "open_loop#{"-#{Paths::LANE}" if Paths::LANE}")
      CFLAGS = %w[-O2 -Wall -Wextra].freeze

      class BuildError < StandardError; end
      class RunError < StandardError; end

      # Whether #run can work here: a binary as new as its source, or gcc to
      # build one. The scenario falls back to Bench::OpenLoop when not.
      def self.available? = fresh? || !gcc.nil?

      def self.fresh? = File.exist?(BINARY) && File.mtime(BINARY) >= File.mtime(SOURCE)

      def self.gcc
        ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).map { |dir| File.join(dir, "gcc") }.find { |f| File.executable?(f) }
      end

      # Builds into a name of this process's own, then renames: two bench
      # processes building at once never run a half-written binary.
      def self.build
        return BINARY if fresh?

        cc = gcc or raise BuildError, "gcc not found on PATH: cannot build #{SOURCE} (install gcc, or use Bench::OpenLoop)"
        FileUtils.mkdir_p(File.dirname(BINARY))
        scratch = "#{BINARY}.#{Process.pid}.tmp"
        out, status = Open3.capture2e(cc, *CFLAGS, "-o", scratch, SOURCE, "-lm")
        raise BuildError, "gcc failed on #{SOURCE}:\n#{out}" unless status.success?

        File.rename(scratch, BINARY)
        BINARY
      ensure
        FileUtils.rm_f(scratch) if scratch
      end

      # tick (this client only): wake for due requests on a grid of this
      # step, sending several per wake, each up to a tick after its slot
      # (counted in its latency). 0: each at its slot, as Bench::OpenLoop.
      # On this 2-core VM 1 ms takes the client from ~0.2 to ~0.1 core at
      # 5,000 req/s (open_loop.c's head comment says why), but the server
      # then gets requests in bursts, which it may feel: by hand against
      # spindle-threads at 10,000 req/s, 4 of 5 runs with a 0.5 or 1 ms tick
      # had a p99 over 160 ms, 1 of 7 without. Not for the report's figures.
      def initialize(port:, path:, rate:, seconds:, max_connections:, timeout: 10, stamp: false, tick: 0)
        @args = ["--port", port, "--path", path, "--rate", rate, "--seconds", seconds,
                 "--max-connections", max_connections, "--timeout", timeout, "--tick", tick].map(&:to_s)
        @args << "--stamp" if stamp
        @seconds = seconds
      end

      def run
        out, err, status = Open3.capture3(self.class.build, *@args)
        raise RunError, "#{BINARY} #{@args.join(' ')} exited #{status.exitstatus.inspect}: #{err.strip}" unless status.success?

        warn err unless err.empty? # a connection limit it could not raise
        result(JSON.parse(out, symbolize_names: true))
      end

      private

      # As the Ruby client's: statuses keyed by Integer, 0 for one never seen.
      def result(json)
        statuses = Hash.new(0)
        json[:statuses].each { |code, n| statuses[code.to_s.to_i] = n }
        Result.new(**json.merge(seconds: @seconds, statuses: statuses))
      end
    end
  end
end
