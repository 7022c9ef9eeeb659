-- bench/run latency: holds wrk to a fixed request rate (`wrk -- RATE`, in
-- requests per second per wrk thread). Each thread keeps an absolute
-- schedule (slot n at start + n / RATE) and delay() makes every request wait
-- for its own slot, so the rate does not drift with the server's latency
-- while connections are free. A request whose slot had already passed when a
-- connection became free is "late" (the server, or wrk, could not keep up);
-- late sends and the worst lateness are reported, since wrk measures latency
-- from the actual send (coordinated omission shows up there, not in p99).
-- Prints the BENCH_RESULT line of wrk_report.lua (loaded from beside this
-- file) plus the pacing counters.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "wrk_report.lua")
local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clk, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

interval, start, sent, late, max_late_ms = 0, nil, 0, 0, 0
function init(args)
  interval = 1000 / tonumber(args[1])
end

function delay()
  local t = now_ms()
  if not start then start = t end
  local slot = start + sent * interval
  sent = sent + 1
  local wait = slot - t
  if wait < 0 then
    if -wait > 1 then -- more than a timer tick behind its slot
      late = late + 1
      if -wait > max_late_ms then max_late_ms = -wait end
    end
    return 0
  end
  return math.floor(wait)
end

done = function(summary, latency, requests)
  local s, l, m = 0, 0, 0
  for _, thread in ipairs(threads) do
    s = s + thread:get("sent")
    l = l + thread:get("late")
    m = math.max(m, thread:get("max_late_ms"))
  end
  bench_result(summary, latency, string.format(',"paced_sent":%d,"paced_late":%d,"paced_max_late_ms":%.1f', s, l, m))
end
