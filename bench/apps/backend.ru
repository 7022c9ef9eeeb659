# frozen_string_literal: true

# The simulated back end of bench/scenarios/backend_latency.rb: answers 200
# after GET /?ms=N milliseconds (0 when absent). Served by Spindle's fibers
# engine, so any number of delayed requests wait at once.
run lambda { |env|
  ms = env["QUERY_STRING"][/(?:\A|&)ms=(\d+)/, 1].to_i
  sleep(ms / 1000.0) if ms.positive?
  [200, { "content-type" => "text/plain" }, ["OK"]]
}
