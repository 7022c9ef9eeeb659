# frozen_string_literal: true

# BENCHMARKS.md #4: 10 ms of simulated I/O per request (Kernel#sleep 0.01, which
# yields under a Fiber::Scheduler), then a small body.
run ->(_env) { sleep 0.01; [200, { "content-type" => "text/plain" }, ["slept 10 ms"]] }
