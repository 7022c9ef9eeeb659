# frozen_string_literal: true

# A Rack 2 style app that hands back a body even where HTTP forbids one (HEAD,
# 204, 304). Not wrapped in Rack::Lint on purpose: Lint would refuse the
# response before the server ever saw it. What the tests check is that the
# server never writes these bytes, since a client would read them as the start
# of the next response.
statuses = lambda do |env|
  status = Integer(env["PATH_INFO"].delete_prefix("/"), exception: false) || 200
  body = "body-that-must-not-be-sent\n"
  [status, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
end

run statuses
