# frozen_string_literal: true

# What apps do with a spooled request body (rack.input) before they answer:
#   /read     read it all
#   /ignore   never touch it
#   /replace  put something else in env["rack.input"]
#   /keep     keep a reference to it past the request (a cache, a leak)
#   /close    close it themselves
KEPT = []

app = lambda do |env|
  input = env["rack.input"]
  case env["PATH_INFO"]
  when "/read" then input.read
  when "/replace" then env["rack.input"] = StringIO.new
  when "/keep" then KEPT << input
  when "/close" then input.close
  end
  [200, { "content-type" => "text/plain" }, ["ok\n"]]
end

run app
