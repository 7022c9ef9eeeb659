# frozen_string_literal: true

# Every request spends a while in Kernel#sleep (which yields under the fiber
# engines) and answers with the pid that served it: under a steady load,
# some request is always in flight when a worker drains.
require "json"

SLOW_SECONDS = 0.2

app = lambda do |_env|
  sleep SLOW_SECONDS
  body = JSON.generate("pid" => Process.pid)
  [200, { "content-type" => "application/json", "content-length" => body.bytesize.to_s }, [body]]
end

run Rack::Lint.new(app)
