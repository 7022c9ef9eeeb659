# frozen_string_literal: true

# Each way an app can fail a request, for the server log's app error lines;
# and an app that names its requests, for the access log. A response's
# x-request-id is "app-" and the request's path, as Rails' RequestId
# middleware sends one it made up.
class RaisingBody
  def initialize(on) = @on = on

  def each
    raise "boom in each" if @on == :each

    yield "part\n"
  end

  def close
    raise "boom in close" if @on == :close
  end
end

app = lambda do |env|
  id = { "x-request-id" => "app-#{env['PATH_INFO'].delete('/')}" }
  case env["PATH_INFO"]
  when "/raise" then raise "boom"
  when "/invalid" then [999, id, []]
  when "/each" then [200, id, RaisingBody.new(:each)]
  when "/close" then [200, id, RaisingBody.new(:close)]
  when "/callback"
    env["rack.response_finished"] << ->(*) { raise "boom in callback" }
    [200, id, ["ok\n"]]
  when "/header" then [200, id.merge("bad header" => "x"), ["ok\n"]]
  when "/rack2" then [200, { "X-Request-Id" => "app-rack2" }, ["ok\n"]]
  else [200, id, ["ok\n"]]
  end
end

run app
