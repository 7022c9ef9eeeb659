# frozen_string_literal: true

# Queue time (docs/QUEUE_TIME.md):
#   GET /hold?path=SOCKET  holds the serving thread at the test's rendezvous
#                          until "go": not only the fiber, the whole thread,
#                          so on a fiber engine the loop reads nothing
#                          meanwhile and the next request waits, as behind a
#                          busy thread (a blocking fiber's I/O never yields).
#   GET /wait?path=SOCKET  as /hold, but only the request's own fiber waits:
#                          a fiber engine's loop goes on reading and serving
#                          (--app-concurrency's gate is what holds the next).
#   GET /__seen?MARKER     "yes" or "no": whether an earlier request that
#                          reached the app had MARKER in its target.
#   anything else          the request's queue time and its start, as JSON.
require "json"
require "socket"
require "rack/utils"

seen = []
seen_lock = Mutex.new

visit = lambda do |path|
  UNIXSocket.open(path) do |socket|
    socket.write("entered\r\n")
    socket.gets
  end
end
hold = ->(path) { Fiber.new(blocking: true) { visit.call(path) }.resume }

text = ->(body) { [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]] }

app = lambda do |env|
  query = env["QUERY_STRING"]
  case env["PATH_INFO"]
  when "/__seen" then next text.call(seen_lock.synchronize { seen.any? { |t| t.include?(query) } } ? "yes" : "no")
  when "/hold"
    hold.call(Rack::Utils.parse_query(query)["path"])
    next text.call("released\n")
  when "/wait"
    visit.call(Rack::Utils.parse_query(query)["path"])
    next text.call("released\n")
  end

  seen_lock.synchronize { seen << "#{env['PATH_INFO']}?#{query}" }
  json = JSON.generate("queue_time" => env["spindle.queue_time"], "queue_start" => env["spindle.queue_start"])
  [200, { "content-type" => "application/json", "content-length" => json.bytesize.to_s }, [json]]
end

run Rack::Lint.new(app)
