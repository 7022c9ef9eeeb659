# frozen_string_literal: true

require "fileutils"
require_relative "../lib/bench/bulk_load"
require_relative "../lib/bench/wrk_trial"

# Issue 16, "Static files": 1 MB and 100 MB files through Rack::Files, beside
# nginx serving the same files (sendfile on). The files are made on first
# use under bench/tmp/static (not in git), the same bytes every time.
module Bench
  module StaticFiles
    DIR = File.join(Paths::TMP, "static")
    SIZES = { "1m.bin" => 1024 * 1024, "100m.bin" => 100 * 1024 * 1024 }.freeze

    def self.ensure!
      FileUtils.mkdir_p(DIR)
      SIZES.each do |name, size|
        path = File.join(DIR, name)
        next if File.size?(path) == size

        random = Random.new(size)
        File.open("#{path}.tmp", "wb") { |f| (size / 65_536).times { f.write(random.bytes(65_536)) } }
        File.rename("#{path}.tmp", path)
      end
      DIR
    end

    # wrk's ceiling on big bodies is below nginx's (see Bench::BulkLoad):
    # these scenarios measure with the big-buffer client instead.
    class Trial < WrkTrial
      def warm_up(connections) = load(connections.max, @settings.warmup).run

      def measure(connections)
        BulkLoad.record(load(connections, @settings.duration).run,
                        connections: connections, processes: @server.launch.processes,
                        client: "bench/lib/bench/bulk_load.rb: #{connections} keep-alive connections, " \
                                "GET #{@scenario.path} for #{@settings.duration} s, 4 MB reads")
      end

      private

      def load(connections, seconds)
        BulkLoad.new(port: @server.launch.port, path: @scenario.path, connections: connections,
                     seconds: seconds, server_pid: @server.pgid)
      end
    end

    def self.define(name, file, title, connections)
      Scenario.define(
        name: name,
        title: title,
        description: "GET /#{file} served by Rack::Files from bench/tmp/static (made on first use), over " \
                     "keep-alive connections, read by bench/lib/bench/bulk_load.rb (4 MB reads; wrk's 8 KB reads " \
                     "capped every server below nginx). nginx serves the same file from disk with sendfile.",
        goal: "Issue 16: 1 KB >= 0.5x nginx (scenario static), 100 MB >= 0.8x nginx.",
        app: "static_files.ru",
        trial: Trial,
        path: "/#{file}",
        connections: connections,
        processes: [1],
        env: -> { { "SPINDLE_BENCH_STATIC" => ensure! } },
        nginx: ->(_launch) { "root #{ensure!}; sendfile on;" },
        quick: { servers: %w[spindle-threads puma nginx], connections: [connections.first], processes: [1],
                 budget_s: 150 }
      )
    end
  end
end

Bench::StaticFiles.define("static_1m", "1m.bin", "Static file (1 MB)", [16, 64])
Bench::StaticFiles.define("static_100m", "100m.bin", "Static file (100 MB)", [16])
