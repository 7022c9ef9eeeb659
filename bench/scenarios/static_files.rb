# frozen_string_literal: true

require "fileutils"

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

    def self.define(name, file, title, connections)
      Scenario.define(
        name: name,
        title: title,
        description: "GET /#{file} served by Rack::Files from bench/tmp/static (made on first use), over " \
                     "keep-alive connections. nginx serves the same file from disk with sendfile.",
        goal: "Issue 16: 1 KB >= 0.5x nginx (scenario static), 100 MB >= 0.8x nginx.",
        app: "static_files.ru",
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
