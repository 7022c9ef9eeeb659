# frozen_string_literal: true

# Sends a 103 Early Hints through rack.early_hints before the final response.
# The body says whether the server offered rack.early_hints at all, so a
# missing feature reads as such in a failure rather than as a missing 103.
link = "</style.css>; rel=preload; as=style"

hints = lambda do |env|
  early_hints = env["rack.early_hints"]
  early_hints&.call("link" => link)
  body = early_hints ? "hinted\n" : "rack.early_hints missing\n"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s, "link" => link }, [body]]
end

run Rack::Lint.new(hints)
