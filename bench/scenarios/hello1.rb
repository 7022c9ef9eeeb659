# frozen_string_literal: true

# Issue 2's second figure: the blocking engine against Puma with one thread
# (the threads engine at one thread beside them), one process, keep-alive.
Bench::Scenario.define(
  name: "hello1",
  title: "Hello world, one thread",
  description: "GET / answered by a one-line Rack app with an 11-byte body, over keep-alive " \
               "connections, every server with a single thread: Spindle's blocking engine is " \
               "single-threaded by design, so this is its like-for-like comparison.",
  goal: "spindle-blocking ≥ Puma with one thread.",
  app: "hello.ru",
  path: "/",
  connections: [16, 64],
  processes: [1],
  expect_body: "Hello World",
  threads: { "spindle-threads" => 1, "puma" => 1 },
  nginx: ->(_launch) { %(default_type text/plain;\nreturn 200 "Hello World";) },
  quick: { servers: %w[spindle-blocking puma], connections: [16] }
)
