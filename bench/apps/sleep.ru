# frozen_string_literal: true

# BENCHMARKS.md #3: a slow app. GET /sleep sleeps 1 s (Kernel#sleep: under a
# Fiber::Scheduler it yields the fiber; under threads it releases the GVL).
# GET /ready answers at once: the harness's readiness probe waits at most 1 s.
run lambda { |env|
  next [200, { "content-type" => "text/plain" }, ["ready"]] if env["PATH_INFO"] == "/ready"

  sleep 1
  [200, { "content-type" => "text/plain" }, ["slept 1 s"]]
}
