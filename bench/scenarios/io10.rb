# frozen_string_literal: true

# BENCHMARKS.md #4 / issue 3: 10 ms of simulated I/O per request at c = 512.
# falcon-benchmark's figure (Falcon 49.6k vs Puma 3.9k req/s) used 8 processes
# each; here 1 and 2 processes on 2 cores shared with wrk. Puma: 5 threads per
# process (--threads), so its ceiling is 500 req/s per process; the fiber
# servers' ceiling is c / 10 ms = 51,200 req/s, far above what 2 cores serve.
Bench::Scenario.define(
  name: "io10",
  title: "10 ms of I/O per request",
  description: "GET / answered after `sleep 0.01` (simulated I/O that yields under a fiber scheduler) " \
               "over 512 keep-alive connections. Spindle fibers and Falcon: one fiber per connection per " \
               "process; Puma: 5 threads per process. Ceiling for a thread pool: threads ÷ 10 ms = 500 req/s " \
               "per process; for fibers c ÷ 10 ms = 51,200 req/s, so they are CPU-bound here.",
  goal: "Fiber engines at the ceiling for the cores available; fibers vs Falcon vs Puma (issue 3).",
  app: "io10.ru",
  path: "/",
  connections: [512],
  processes: [1, 2],
  expect_body: "slept 10 ms",
  servers: %w[spindle-fibers falcon puma],
  quick: { servers: %w[spindle-fibers falcon], processes: [1] }
)
