# frozen_string_literal: true

# Every test app behind one server, so a test class can share one process:
#   /stream /early_hints /hijack /partial_hijack /raise /gate /status
#   /raw_status /upload /headers /unsafe_headers /response_finished, and
#   everything else goes to the echo app.
#
# GET /__seen?MARKER answers "yes" or "no": whether any earlier request that
# reached the app had MARKER in its target. Tests use it to show that the app
# was never called for a request the server had to refuse.
dir = File.expand_path(File.dirname(__FILE__))
load_app = lambda do |name|
  app = Rack::Builder.parse_file(File.join(dir, "#{name}.ru"))
  app.is_a?(Array) ? app.first : app # Rack 2 returns [app, options]
end

echo = load_app.call("echo")
routes = Rack::URLMap.new(
  %w[stream early_hints hijack partial_hijack raise gate status raw_status upload
     headers unsafe_headers response_finished]
    .to_h { |name| ["/#{name}", load_app.call(name)] }
    .merge("/" => echo)
)

seen = []
seen_lock = Mutex.new

run(lambda do |env|
  if env["PATH_INFO"] == "/__seen"
    marker = env["QUERY_STRING"]
    found = seen_lock.synchronize { seen.any? { |target| target.include?(marker) } }
    answer = found ? "yes" : "no"
    next [200, { "content-type" => "text/plain", "content-length" => answer.bytesize.to_s }, [answer]]
  end

  seen_lock.synchronize { seen << "#{env['PATH_INFO']}?#{env['QUERY_STRING']}" }
  # URLMap only routes paths; OPTIONS * (PATH_INFO "*") goes to echo as is.
  env["PATH_INFO"] == "*" ? echo.call(env) : routes.call(env)
end)
