# frozen_string_literal: true

# Found by Rack 2's rackup: `rackup -s spindle`.
require "rack/handler"
require_relative "../../spindle/rack_handler"

module Rack
  module Handler
    Spindle = ::Spindle::RackHandler
    register :spindle, Spindle
  end
end
