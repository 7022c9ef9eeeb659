# frozen_string_literal: true

# A page whose script fetches from the server and writes the answer into the
# DOM: what a headless browser dumps proves it loaded the page, ran the script
# and made a second request over the same server.
PAGE = <<~HTML
  <!doctype html>
  <html><head><title>spindle browser test</title></head>
  <body><p id="out">waiting</p>
  <script>
    fetch("/api?from=browser", { method: "POST", body: "ping" })
      .then((r) => r.text())
      .then((t) => { document.getElementById("out").textContent = "answer:" + t; });
  </script></body></html>
HTML

app = lambda do |env|
  if env["PATH_INFO"] == "/api"
    [200, { "content-type" => "text/plain" }, ["#{env['REQUEST_METHOD']} #{env['rack.input'].read} #{env['QUERY_STRING']}"]]
  else
    [200, { "content-type" => "text/html; charset=utf-8" }, [PAGE]]
  end
end

run Rack::Lint.new(app)
