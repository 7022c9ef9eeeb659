-- bench/run soak: counts answered requests and stops wrk once `wrk -- N`
-- responses have arrived (the thread stops; a SIGINT to wrk itself ends its
-- main sleep, so the run ends at N, not at -d). Prints the same BENCH_RESULT
-- line as wrk_report.lua. The limit is per wrk thread (the soak runs one).
local ffi = require("ffi")
ffi.cdef[[ int kill(int pid, int sig); int getpid(void); ]]
local limit, seen = 0, 0

function init(args)
  limit = tonumber(args[1]) or 0
end

function response(status, headers, body)
  seen = seen + 1
  if limit > 0 and seen == limit then
    wrk.thread:stop()
    ffi.C.kill(ffi.C.getpid(), 2)
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
