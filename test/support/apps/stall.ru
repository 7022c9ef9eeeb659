# frozen_string_literal: true

# Holds the event loop in named methods, two calls deep and partly inside a
# "gem" (gems/fifo_lib-1.0), until the test writes to the FIFO it names
# (?fifo=PATH). The stall warning must name those methods.
require "rack/utils"
require_relative "gems/fifo_lib-1.0/lib/fifo_lib"

module StallApp
  def self.hold_the_loop(fifo) = FifoLib.wait_for(fifo)
end

app = lambda do |env|
  StallApp.hold_the_loop(Rack::Utils.parse_query(env["QUERY_STRING"]).fetch("fifo"))
  [200, { "content-type" => "text/plain" }, ["released\n"]]
end

run Rack::Lint.new(app)
