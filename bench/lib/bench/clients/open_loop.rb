# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require_relative "../paths"

module Bench
  # An open-loop HTTP/1.1 client at a fixed request rate, for the overload
  # scenario: request n is due at start + n / rate whatever the server does,
  # and its latency counts from that slot, not from when a connection was
  # free to send it (so a server that falls behind is charged for the
  # backlog it causes: no coordinated omission). wrk's paced.lua holds a
  # rate too, but wrk's histogram mixes the 503s of a shedding server in
  # with the pages it served; here every response keeps its own status.
  #
  # The client is open_loop.c (one thread, epoll), built with gcc into
  # bench/tmp/ the first time and again when the source is newer: a Ruby
  # one cost 0.3-0.6 core at 1,000 req/s on the cores the server under
  # test needs, and could not hold ~12,000 req/s at all. Up to
  # max_connections keep-alive connections, opened as the schedule needs
  # them; a due request waits for a free one (its wait counts). A response
  # that says `connection: close` closes its connection.
  #
  # Bounded: rate * seconds requests; a request not answered `timeout`
  # seconds after its slot is given up (a timeout, sent or not); nothing runs
  # past seconds + timeout.
  class OpenLoop
    Result = Struct.new(:offered, :seconds, :wall, :last_ok, :statuses, :ok_latencies, :ok_from_send, :timeouts, :errors, :late_sends,
                        :connections_opened, :cpu_s, keyword_init: true)

    SOURCE = File.join(__dir__, "open_loop.c")
    # One per lane: a binary built in the 3.3/3.4 chroots (a newer glibc)
    # need not run on the host.
    BINARY = File.join(Paths::TMP, "open_loop#{"-#{Paths::LANE}" if Paths::LANE}")
    CFLAGS = %w[-O2 -Wall -Wextra].freeze

    class BuildError < StandardError; end
    class RunError < StandardError; end

    def self.fresh? = File.exist?(BINARY) && File.mtime(BINARY) >= File.mtime(SOURCE)

    def self.gcc
      ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).map { |dir| File.join(dir, "gcc") }.find { |f| File.executable?(f) }
    end

    # Builds into a name of this process's own, then renames: two bench
    # processes building at once never run a half-written binary. gcc is
    # there wherever Spindle's own extension was built.
    def self.build
      return BINARY if fresh?

      cc = gcc or raise BuildError, "gcc not found on PATH: cannot build #{SOURCE}"
      FileUtils.mkdir_p(File.dirname(BINARY))
      scratch = "#{BINARY}.#{Process.pid}.tmp"
      out, status = Open3.capture2e(cc, *CFLAGS, "-o", scratch, SOURCE, "-lm")
      raise BuildError, "gcc failed on #{SOURCE}:\n#{out}" unless status.success?

      File.rename(scratch, BINARY)
      BINARY
    ensure
      FileUtils.rm_f(scratch) if scratch
    end

    # stamp: each request carries `X-Request-Start: t=<when it was sent,
    # wall clock>`, as a proxy in front stamps the time a request reached
    # it, so a server that trusts it sees the wait in the kernel's queues as
    # well as its own (docs/QUEUE_TIME.md). The send, not the slot: a wait
    # in this client's own queue (all connections busy, or the client short
    # of CPU) is upstream of any proxy. Each 2xx's latency is kept twice:
    # from its slot (what a user sees, the client's queue included) and
    # from its send.
    def initialize(port:, path:, rate:, seconds:, max_connections:, timeout: 10, stamp: false)
      @args = ["--port", port, "--path", path, "--rate", rate, "--seconds", seconds,
               "--max-connections", max_connections, "--timeout", timeout].map(&:to_s)
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

    # Statuses keyed by Integer, 0 for one never seen.
    def result(json)
      statuses = Hash.new(0)
      json[:statuses].each { |code, n| statuses[code.to_s.to_i] = n }
      Result.new(**json.merge(seconds: @seconds, statuses: statuses))
    end
  end
end
