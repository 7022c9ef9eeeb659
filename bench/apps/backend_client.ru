# frozen_string_literal: true

# The app of bench/scenarios/backend_latency.rb: every GET /call?port=P&ms=N
# makes one HTTP call with Net::HTTP (a new connection, as a plain client
# would) to the back end on 127.0.0.1:P, asking it to delay N ms, and answers
# with the back end's status. Nothing here knows which engine runs it: under
# fibers the call yields, under threads it releases the GVL, under blocking it
# holds the process.
require "net/http"

run lambda { |env|
  query = env["QUERY_STRING"]
  port = query[/(?:\A|&)port=(\d+)/, 1]
  next [200, { "content-type" => "text/plain" }, ["ready"]] unless port

  ms = query[/(?:\A|&)ms=(\d+)/, 1].to_i
  http = Net::HTTP.new("127.0.0.1", Integer(port))
  http.open_timeout = 5
  http.read_timeout = 30
  response = http.start { |h| h.get("/?ms=#{ms}") }
  [response.code.to_i == 200 ? 200 : 502, { "content-type" => "text/plain" }, ["backend #{response.code}"]]
}
