# frozen_string_literal: true

# Found by rackup 2 (Rack 3): `rackup -s spindle`.
require "rackup/handler"
require_relative "../../spindle/rack_handler"

module Rackup
  module Handler
    Spindle = ::Spindle::RackHandler
    register :spindle, Spindle
  end
end
