# frozen_string_literal: true

# Scenario "refork": the Puma PR #2099 app. Each worker builds its own
# $big = Array.new(10_000_000) { Object.new } (~480 MB of objects) on its first
# request, so without a refork every worker holds a private copy; a worker
# forked from a warmed one shares it copy-on-write.
#
# Differences from the PR's app, for the harness: a mutex so a threaded worker
# builds $big once, not once per thread (10M objects × 5 threads × 8 workers
# would not fit); no `3.times { GC.start }` per request (it made each request
# take seconds; it is not what is measured); GET /ready answers without
# building (the readiness probe); and, when REFORK_MARKS names a directory,
# an empty file built-PID when a process builds $big and seen-PID on the
# first request a process serves (a reforked worker inherits $big but has a
# new pid), so the harness knows every worker has served.
N = Integer(ENV.fetch("REFORK_BIG_N", "10000000"))
MARKS = ENV["REFORK_MARKS"]
BIG_LOCK = Mutex.new

run lambda { |env|
  return [200, { "content-type" => "text/plain" }, ["ready"]] if env["PATH_INFO"] == "/ready"

  BIG_LOCK.synchronize do
    unless $big
      $big = Array.new(N) { Object.new }
      File.write(File.join(MARKS, "built-#{Process.pid}"), "") if MARKS
    end
    if $seen_pid != Process.pid
      $seen_pid = Process.pid
      File.write(File.join(MARKS, "seen-#{Process.pid}"), "") if MARKS
    end
  end
  [200, { "content-type" => "text/plain" }, ["Hello World"]]
}
