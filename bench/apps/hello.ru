# frozen_string_literal: true

# Scenario "hello": the smallest response, so the figure is the server's own
# per-request cost. The body is the same 11 bytes the nginx ceiling returns.
run ->(_env) { [200, { "content-type" => "text/plain" }, ["Hello World"]] }
