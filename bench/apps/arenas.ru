# frozen_string_literal: true

# Scenario "arenas", server half: the seed's allocation loop as a Rack app, run
# by Spindle's threads engine with 20 threads. Every request allocates
# ARENAS_PER_REQUEST (default 10) arrays of 1,000 × 1,000-character strings
# (~10 MB of short-lived strings) and drops them, so 20 concurrent requests are
# the seed's 20 allocating threads.
PER_REQUEST = Integer(ENV.fetch("ARENAS_PER_REQUEST", "10"))

run lambda { |_env|
  PER_REQUEST.times { Array.new(1000) { "a" * 1000 } }
  [200, { "content-type" => "text/plain" }, ["allocated"]]
}
