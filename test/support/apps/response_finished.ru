# frozen_string_literal: true

# Registers a rack.response_finished callback that reports, at the test's
# rendezvous (?path=P), that it ran and with what status and error.
# ?raise=1 makes the app raise after registering it.
require "socket"
require "rack/utils"

finished = lambda do |env|
  params = Rack::Utils.parse_query(env["QUERY_STRING"])
  callbacks = env["rack.response_finished"]
  unless callbacks
    body = "rack.response_finished missing\n"
    return [501, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
  end

  callbacks << lambda do |_env, status, _headers, error|
    UNIXSocket.open(params["path"]) { |socket| socket.write("finished status=#{status.inspect} error=#{error&.class}\r\n") }
  end
  raise "spindle-test-boom: raised after registering response_finished" if params["raise"]

  [200, { "content-type" => "text/plain", "content-length" => "3" }, ["ok\n"]]
end

run Rack::Lint.new(finished)
