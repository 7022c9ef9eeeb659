# frozen_string_literal: true

# Responses Rack::Lint would refuse, so this app is deliberately not wrapped
# in it: the point is what the server does when an app (or a Rack 2 app that
# predates the rules) hands it something it must not write as is.
#   /crlf /lf /nul  a header value that would split the response
#   /bad_name       header names that are not tokens
#   /status_42      a status outside 100..599
#   /status_1000
#   /rack2          Rack 2 style mixed-case names, including Content-Length
#   /raise_in_each  a body that raises while being iterated, before any byte
raising_body = Object.new
def raising_body.each
  raise "spindle-test-boom: body raised before the first chunk"
end

unsafe = lambda do |env|
  case env["PATH_INFO"]
  when "/crlf"
    [200, { "x-split" => "ok\r\nx-injected: yes", "x-good" => "fine", "content-length" => "2" }, ["ok"]]
  when "/lf"
    [200, { "x-split" => "ok\nx-injected: yes", "x-good" => "fine", "content-length" => "2" }, ["ok"]]
  when "/nul"
    [200, { "x-split" => "ok\0x-injected: yes", "x-good" => "fine", "content-length" => "2" }, ["ok"]]
  when "/bad_name"
    [200, { "bad name" => "v", "x:colon" => "v", "x-good" => "fine", "content-length" => "2" }, ["ok"]]
  when "/status_42"
    [42, { "content-length" => "2" }, ["ok"]]
  when "/status_1000"
    [1000, { "content-length" => "2" }, ["ok"]]
  when "/rack2"
    [200, { "Content-Type" => "text/plain", "Content-Length" => "5" }, ["hello"]]
  when "/raise_in_each"
    [200, { "content-type" => "text/plain" }, raising_body]
  else
    [404, { "content-length" => "0" }, []]
  end
end

run unsafe
