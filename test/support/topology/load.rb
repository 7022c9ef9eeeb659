# frozen_string_literal: true

require "json"

class Topology
  # A running load_client.rb in the client namespace and what it recorded.
  class Load
    CLIENT = File.expand_path("load_client.rb", __dir__)

    Record = Struct.new(:kind, :start, :finish, :ok, :status, :error, :version, :host, keyword_init: true) do
      def post? = kind.end_with?("post")

      def in_flight_at?(time) = start <= time && finish >= time
    end

    def initialize(topology, url, threads: 1, max_seconds: 300, max_requests: 500_000)
      @out = File.join(topology.dir, "load-#{Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)}.jsonl")
      @stop_file = "#{@out}.stop"
      File.write(@out, "")
      argv = topology.in(:client, RbConfig.ruby, CLIENT, "--url", url, "--threads", threads, "--out", @out,
                         "--stop-file", @stop_file, "--max-seconds", max_seconds, "--max-requests", max_requests)
      @process = topology.processes.spawn("load-client", argv)
    end

    # Requests completed so far (a line each).
    def count = File.foreach(@out).count

    def alive? = @process.alive?

    # Asks the client to stop, waits for it (it ends its in-flight requests,
    # bounded by their timeouts), and returns every record.
    def stop(deadline: 60)
      File.write(@stop_file, "")
      raise Topology::Error, "the load client did not stop:\n#{@process.log_tail}" unless @process.wait(deadline)

      records
    end

    def records
      File.foreach(@out).map do |line|
        r = JSON.parse(line)
        Record.new(kind: r["k"], start: r["s"], finish: r["e"], ok: r["ok"], status: r["st"], error: r["err"],
                   version: r["v"], host: r["h"])
      end
    end

    def log_tail = @process.log_tail
  end
end
