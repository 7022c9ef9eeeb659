# frozen_string_literal: true

# Holds the request until the test says so: GET /?path=SOCKET connects to the
# test's rendezvous socket, says "entered" and waits for "go" (or for the test
# to go away). Orders "the app is running" against signals and disconnects
# without any sleep.
require "socket"
require "rack/utils"

gate = lambda do |env|
  path = Rack::Utils.parse_query(env["QUERY_STRING"])["path"]
  return [400, { "content-type" => "text/plain", "content-length" => "8" }, ["no path\n"]] unless path

  UNIXSocket.open(path) do |socket|
    socket.write("entered\r\n")
    socket.gets
  end
  body = "released\n"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
end

run Rack::Lint.new(gate)
