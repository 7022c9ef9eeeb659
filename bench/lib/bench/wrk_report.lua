-- Loaded by every wrk run of bench/run (wrk -s), and by the scripts that add
-- to it (soak.lua, paced.lua). When the run ends it prints one line of JSON
-- with exact figures (latencies in microseconds), which bench/lib/bench/wrk.rb
-- reads instead of wrk's rounded text; `extra` is more JSON members, for a
-- script that counts more.
function bench_result(summary, latency, extra)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f%s}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean, extra or ""))
end

done = function(summary, latency, requests)
  bench_result(summary, latency)
end
