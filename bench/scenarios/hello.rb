# frozen_string_literal: true

# BENCHMARKS.md #1: hello world, keep-alive, c = 16, 64, 256, 1 and 2 processes.
Bench::Scenario.define(
  name: "hello",
  title: "Hello world",
  description: "GET / answered by a one-line Rack app with an 11-byte body, over keep-alive " \
               "connections: the server's own per-request cost.",
  goal: "Every Spindle engine ahead of Puma and Falcon in the same run; the ratio to nginx.",
  app: "hello.ru",
  path: "/",
  connections: [16, 64, 256],
  processes: [1, 2],
  expect_body: "Hello World",
  nginx: ->(_launch) { %(default_type text/plain;\nreturn 200 "Hello World";) },
  quick: { servers: %w[spindle-threads spindle-fibers puma falcon nginx], connections: [64], processes: [1] }
)
