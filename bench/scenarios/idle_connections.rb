# frozen_string_literal: true

require_relative "../lib/bench/scenario_kit/idle_connections"

# Issue 6 / BENCHMARKS.md #11: 10,000 idle keep-alive connections held open
# with wrk load on top, per engine, Puma beside them.
Bench::Scenario.define(
  name: "idle_connections",
  title: "10,000 idle keep-alive connections",
  description: "10,000 keep-alive connections from 127.0.0.1, each served once and then left idle, held open while " \
               "wrk loads the same process; throughput with and without them, and server memory per idle connection.",
  goal: "The run completes on every engine that claims to handle it; throughput under the idle load; " \
        "memory per idle connection.",
  app: "hello.ru",
  path: "/",
  connections: [64],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-blocking spindle-threads spindle-fibers spindle-hybrid puma],
  server_args: { "spindle-*" => ["--max-connections", "11000"] },
  trial: Bench::IdleConnections::Trial,
  report: Bench::IdleConnections::Report,
  quick: { servers: %w[spindle-fibers puma] } # and 1,000 idle connections, not 10,000 (the trial's own quick size)
)
