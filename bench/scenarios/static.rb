# frozen_string_literal: true

# The 1 KB file both static scenarios ask for, from bench/apps/public.
public_dir = File.join(Bench::Paths::APPS, "public")
one_kb = {
  app: "static.ru",
  path: "/1k.txt",
  expect_body: File.read(File.join(public_dir, "1k.txt")),
  nginx: ->(_launch) { "root #{public_dir};" }
}

# BENCHMARKS.md #2: a ~1 KB file through Rack::Files, per engine, per process count.
Bench::Scenario.define(
  name: "static",
  title: "Small static file (1 KB)",
  description: "GET /1k.txt served by Rack::Files from bench/apps/public (stat, open, read " \
               "per request), over keep-alive connections. nginx serves the same file from disk.",
  goal: "Per engine, per process count; the seed measured 3.6k req/s single-threaded.",
  quick: { servers: %w[spindle-threads puma nginx], connections: [64], processes: [1] },
  **one_kb
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
  servers: %w[spindle-* iodine puma nginx],
  server_args: { "spindle-*" => ["--static", public_dir], "iodine" => ["-www", public_dir] },
  quick: { servers: %w[spindle-blocking iodine nginx], connections: [64], processes: [1] },
  **one_kb
)
