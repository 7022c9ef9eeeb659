# frozen_string_literal: true

# Holds the event loop without yielding (a busy loop, as CPU-bound code or a C
# extension that never yields would) until the test creates the release file.
require "rack/utils"

app = lambda do |env|
  release = Rack::Utils.parse_query(env["QUERY_STRING"]).fetch("release")
  nil until File.exist?(release)
  [200, { "content-type" => "text/plain" }, ["spun\n"]]
end

run Rack::Lint.new(app)
