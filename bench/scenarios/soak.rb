# frozen_string_literal: true

require_relative "../lib/bench/scenario_kit/soak"

# Issue 5 / BENCHMARKS.md #10: a bounded soak of one process — up to a
# million requests, 1 in 10 malformed — with RSS, descriptors and threads
# sampled as it goes. Run it with --rounds 1: each round is a whole soak.
Bench::Scenario.define(
  name: "soak",
  title: "Soak: a million requests, 1 in 10 malformed",
  description: "One Spindle process (threads engine) receives valid GET / on keep-alive connections (wrk) and, " \
               "beside them, malformed requests from shared/BAD_INPUTS.md, each on its own connection. RSS, open " \
               "descriptors and threads are sampled every 50,000 requests.",
  goal: "No crash, RSS flat after warm-up, descriptors and threads back to their baseline.",
  app: "hello.ru",
  path: "/",
  connections: [16],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads],
  trial: Bench::Soak::Trial,
  report: Bench::Soak::Report,
  quick: { rounds: 1 } # each round is a whole soak (the trial's quick size: 20,000 requests)
)
