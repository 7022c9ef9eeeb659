# frozen_string_literal: true

require "rack/files"

# Scenario "static": a ~1 KB file through Rack::Files, the Rack way to serve a
# file (stat, open, read), with no server-side static handler in front of it.
run Rack::Files.new(File.join(__dir__, "public"))
