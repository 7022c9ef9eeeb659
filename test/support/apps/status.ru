# frozen_string_literal: true

# Responses that must carry no body on the wire: HEAD, 204 and 304. The app is
# a well-behaved Rack 3 app (Lint checks it returns no body for HEAD), so what
# the tests check is the server's framing: content-length kept for HEAD, no
# body bytes, the connection still usable afterwards.
require "rack/utils"

text = "hello, head\n"

statuses = lambda do |env|
  case env["PATH_INFO"]
  when "/204"
    [204, { "x-status" => "204" }, []]
  when "/304"
    [304, { "etag" => '"v1"' }, []]
  else
    body = env["REQUEST_METHOD"] == "HEAD" ? [] : [text]
    [200, { "content-type" => "text/plain", "content-length" => text.bytesize.to_s }, body]
  end
end

run Rack::Lint.new(statuses)
