-- bench/run soak: counts answered requests and stops wrk once `wrk -- N`
-- responses have arrived (the thread stops; a SIGINT to wrk itself ends its
-- main sleep, so the run ends at N, not at -d). Prints the same BENCH_RESULT
-- line as wrk_report.lua (its done(), loaded from beside this file). The
-- limit is per wrk thread (the soak runs one).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "wrk_report.lua")
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
