# frozen_string_literal: true

require "json"
require "socket"
require "tmpdir"
require_relative "spindle_process"
require_relative "waiting"

# Cluster tests: start a master with a control socket, ask it for stats, wait for
# conditions with deadlines, and put continuous load on it while counting every
# failed request.
module ClusterHelpers
  include Waiting

  DEADLINE = Waiting::DEADLINE

  def start_cluster(*args, workers: 2, env: {})
    @control = File.join(Dir.mktmpdir("spindle-cluster"), "control.sock")
    spawn_server("-w", workers.to_s, "--control", "unix://#{@control}", "-b", SpindleIntegrationTest::LOOPBACK,
                 *args, env: env)
  end

  def control(command)
    UNIXSocket.open(@control) do |socket|
      socket.puts(JSON.generate("command" => command))
      JSON.parse(socket.gets)
    end
  end

  def stats = control("stats")

  def serving_workers = stats["workers"].select { |w| w["state"] == "serving" }

  # Processes of the test's server (its process group) that are masters: a
  # master not yet past its boot still shows its command line.
  def masters(process)
    Dir["/proc/[0-9]*"].filter_map do |dir|
      pgrp = File.read("#{dir}/stat")[/\) \S+ \d+ (\d+)/, 1].to_i
      cmdline = File.read("#{dir}/cmdline")
      File.basename(dir).to_i if pgrp == process.pid && cmdline.match?(%r{\Aspindle master|bin/spindle})
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
  end

  # The inode of the listening UNIX socket bound at path (/proc/net/unix).
  # Accepted connections on the socket list its path too: the listener is the
  # line whose flags say it accepts connections (__SO_ACCEPTCON).
  def listening_inode(path)
    line = File.readlines("/proc/net/unix").find { |l| l.split[7] == path && l.split[3] == "00010000" }
    line&.split&.fetch(6)&.to_i
  end

  # The socket inodes a process has open.
  def socket_inodes(pid)
    Dir["/proc/#{pid}/fd/*"].filter_map do |fd|
      File.readlink(fd)[/\Asocket:\[(\d+)\]\z/, 1]&.to_i
    rescue Errno::ENOENT
      nil
    end
  end

  # One request on a fresh connection, closed after the response.
  def self.get(process, path)
    connection = process.connect
    connection.write(HttpClient.request("GET", path, [["Connection", "close"]]))
    connection.read_response
  ensure
    connection&.close
  end

  # The log entries one process wrote, continuation lines (a backtrace's
  # frames) included.
  def self.log_of(process, pid)
    entries = process.output.lines.slice_before { |line| !line.start_with?(" ") }
    entries.select { |entry| entry.first.match?(/\A\S+ #{pid} /) }.join
  end

  def get_json(process, path)
    response = ClusterHelpers.get(process, path)
    [response.status, (JSON.parse(response.body) if response.status == 200)]
  end

  # Requests on fresh connections from a few threads until stopped, bounded in
  # count and time. Every response that is not a 200 counts as a failure.
  class Load
    MAX_REQUESTS = 50_000
    MAX_SECONDS = 90

    attr_reader :ok, :failures

    def initialize(process, threads: 4)
      @process = process
      @ok = 0
      @failures = []
      @stop = false
      @lock = Mutex.new
      @started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @threads = Array.new(threads) { Thread.new { run } }
    end

    def stop
      @stop = true
      @threads.each(&:join)
      self
    end

    private

    def run
      one_request until @stop || over_budget?
    end

    def one_request
      status = ClusterHelpers.get(@process, "/").status
      @lock.synchronize { status == 200 ? @ok += 1 : @failures << "status #{status}" }
    rescue StandardError => e
      @lock.synchronize { @failures << "#{e.class}: #{e.message}" }
    end

    def over_budget?
      @ok + @failures.size >= MAX_REQUESTS ||
        Process.clock_gettime(Process::CLOCK_MONOTONIC) - @started > MAX_SECONDS
    end
  end
end
