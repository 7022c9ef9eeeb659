# frozen_string_literal: true

# BENCHMARKS.md #2: a ~1 KB file through Rack::Files, per engine, per process count.
Bench::Scenario.define(
  name: "static",
  title: "Small static file (1 KB)",
  description: "GET /1k.txt served by Rack::Files from bench/apps/public (stat, open, read " \
               "per request), over keep-alive connections. nginx serves the same file from disk.",
  goal: "Per engine, per process count; the seed measured 3.6k req/s single-threaded.",
  app: "static.ru",
  path: "/1k.txt",
  connections: [16, 64, 256],
  processes: [1, 2],
  expect_body: File.read(File.join(Bench::Paths::APPS, "public", "1k.txt")),
  nginx: ->(_launch) { "root #{File.join(Bench::Paths::APPS, 'public')};" },
  quick: { servers: %w[spindle-threads puma nginx], connections: [64], processes: [1] }
)
