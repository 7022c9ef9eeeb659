# frozen_string_literal: true

# Each route announces itself at the test's rendezvous, then waits in one of the
# ways an app waits. Under a fiber engine every wait must yield, so N requests
# can all be waiting at once on one thread; an engine that blocks on any of
# them never gets the next request to the rendezvous, and the test fails on
# its deadline.
require "socket"
require "net/http"
require "rack/utils"

def announce(path, message = "entered")
  socket = UNIXSocket.new(path)
  socket.write("#{message}\r\n")
  socket
end

ROUTES = {
  # A socket read: wait for the test's "go".
  "/socket" => ->(q) { announce(q["path"]).tap(&:gets).close },
  # Kernel#sleep, polled until the test creates the release file.
  "/sleep" => lambda { |q|
    announce(q["path"]).close
    sleep 0.01 until File.exist?(q["release"])
  },
  # Net::HTTP to a loopback back end by name (DNS through the scheduler too).
  "/net_http" => lambda { |q|
    announce(q["path"]).close
    Net::HTTP.get(URI("http://localhost:#{q['port']}/"))
  },
  # Concurrent work started inside the request.
  "/async" => lambda { |q|
    barrier = Async::Barrier.new
    3.times { |i| barrier.async { announce(q["path"], "task-#{i}").tap(&:gets).close } }
    barrier.wait
  },
}.freeze

app = lambda do |env|
  route = ROUTES.fetch(env["PATH_INFO"]) { return [404, { "content-type" => "text/plain" }, ["no route\n"]] }
  route.call(Rack::Utils.parse_query(env["QUERY_STRING"]))
  [200, { "content-type" => "text/plain" }, ["done\n"]]
end

run Rack::Lint.new(app)
