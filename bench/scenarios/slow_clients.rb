# frozen_string_literal: true

require_relative "../lib/bench/scenario_kit/slow_clients"

# Issue 5 / BENCHMARKS.md #12: slowloris, slow body and slow read
# (Debian's slowhttptest) against one process, while wrk measures normal
# hello traffic beside each attack.
Bench::Scenario.define(
  name: "slow_clients",
  title: "Slow clients (slowloris, slow body, slow read)",
  description: "Normal clients (wrk, GET /, keep-alive) measured alone, then beside each of three slowhttptest " \
               "attacks on the same process: slowloris (heads never finished), slow body (POST body trickled) and " \
               "slow read (a 1 MiB response read a few bytes at a time through a tiny window).",
  goal: "Normal clients' p99 latency barely moves and their throughput holds under each attack " \
        "(Puma's reactor protects threads from slow heads, not slow reads).",
  app: "slow_clients.ru",
  path: "/",
  connections: [16],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads spindle-fibers puma],
  trial: Bench::SlowClients::Trial,
  report: Bench::SlowClients::Report,
  # Three attacks of ~6 s each per start (the trial's quick size: 100 attack
  # connections, 2 s of wrk): one round, two servers.
  quick: { servers: %w[spindle-threads puma], rounds: 1, budget_s: 75 }
)
