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

# Issue 16, 1 KB >= 0.5x nginx: the same file answered by the server itself,
# before the app (Spindle's --static, Iodine's -www public folder), as nginx
# answers it. Puma has no such handler: it serves the file through
# Rack::Files as in "static", for scale.
Bench::Scenario.define(
  name: "static_server",
  title: "Small static file (1 KB) from the server's own static handler",
  description: "GET /1k.txt answered by the server before the app: Spindle with --static bench/apps/public, " \
               "Iodine with -www bench/apps/public; Puma through Rack::Files (it has no static handler). " \
               "nginx serves the same file from disk.",
  goal: "Issue 16: 1 KB >= 0.5x nginx.",
  app: "static.ru",
  path: "/1k.txt",
  connections: [16, 64, 256],
  processes: [1, 2],
  servers: %w[spindle-* iodine puma nginx],
  server_args: { "spindle-*" => ["--static", File.join(Bench::Paths::APPS, "public")],
                 "iodine" => ["-www", File.join(Bench::Paths::APPS, "public")] },
  expect_body: File.read(File.join(Bench::Paths::APPS, "public", "1k.txt")),
  nginx: ->(_launch) { "root #{File.join(Bench::Paths::APPS, 'public')};" },
  quick: { servers: %w[spindle-blocking iodine nginx], connections: [64], processes: [1] }
)
