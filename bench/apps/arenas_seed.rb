# frozen_string_literal: true

# Scenario "arenas", plain-script half: the seed's test (shared seed 003, "Parallel
# Ruby and how it eats all your memory"): 20 threads, each allocating a
# 1,000-element array of 1,000-character strings in a loop. Bounded: each thread
# runs ARENAS_ITERATIONS loops (default 150), so the script allocates
# 20 × 150 × ~1 MB ≈ 3 GB in all and then exits. The arrays are dropped at once
# (garbage); what stays resident is the allocator's fragmentation. The harness
# samples RSS from outside; at the end the script prints its peak (VmHWM) and
# final RSS as one JSON line.
require "json"

THREADS = Integer(ENV.fetch("ARENAS_THREADS", "20"))
ITERATIONS = Integer(ENV.fetch("ARENAS_ITERATIONS", "150"))

started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
THREADS.times.map do
  Thread.new do
    ITERATIONS.times { Array.new(1000) { "a" * 1000 } }
  end
end.each(&:join)

status = File.read("/proc/self/status")
kib = ->(field) { status[/^#{field}:\s+(\d+) kB/, 1].to_i * 1024 }
puts "ARENAS_RESULT " + JSON.generate(peak_rss: kib.call("VmHWM"), final_rss: kib.call("VmRSS"),
                                      seconds: (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).round(3),
                                      threads: THREADS, iterations: ITERATIONS, gc_count: GC.count,
                                      malloc_arena_max: ENV["MALLOC_ARENA_MAX"], ld_preload: ENV["LD_PRELOAD"])
