# frozen_string_literal: true

require_relative "../lib/bench/scenario_kit/latency"

# Issue 6: latency percentiles at fixed request rates (25, 50 and 75 % of
# Puma's maximum, measured in the same run), not at maximum throughput.
Bench::Scenario.define(
  name: "latency",
  title: "Latency at a fixed request rate",
  description: "GET / (hello) at three fixed request rates — 25, 50 and 75 % of Puma's maximum on this machine, " \
               "measured at the start of the run — paced by wrk's delay() hook; p50/p99/p99.9 per server.",
  goal: "Latency percentiles (p50/p99/p99.9) at a fixed request rate, not only throughput; Spindle's threads and " \
        "fibers engines beside Puma and Falcon.",
  app: "hello.ru",
  path: "/",
  connections: [50],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads spindle-fibers puma falcon],
  trial: Bench::Latency::Trial,
  report: Bench::Latency::Report,
  # Three paced runs per start, and Puma's calibration start on top.
  quick: { servers: %w[spindle-threads puma], budget_s: 60 }
)
