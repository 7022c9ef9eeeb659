# frozen_string_literal: true

# Well-formed Rack 3 responses whose framing the server has to work out:
#   /multi   an Array header value, written as one field line per element
#   /array   an Array body without content-length: the size is known, so the
#            server should send content-length rather than chunked
#   /empty   an empty body without content-length
headers = lambda do |env|
  case env["PATH_INFO"]
  when "/multi"
    [200, { "content-type" => "text/plain", "set-cookie" => ["a=1", "b=2"], "content-length" => "5" }, ["multi"]]
  when "/array"
    [200, { "content-type" => "text/plain" }, ["abc", "def", "ghi"]]
  else
    [200, { "content-type" => "text/plain" }, []]
  end
end

run Rack::Lint.new(headers)
