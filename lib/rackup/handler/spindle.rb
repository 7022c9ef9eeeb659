# frozen_string_literal: true

# Found by rackup 2 (Rack 3): `rackup -s spindle`, `rails server -u spindle`.
require "rackup/handler"
require_relative "../../spindle/boot/handler_load"

module Rackup
  module Handler
    # A module of its own (not Spindle::RackHandler under another name):
    # rackup and `rails server` name the server after it ("=> Booting Spindle").
    module Spindle
      extend ::Spindle::RackHandler::Entry
    end
    register :spindle, Spindle
  end
end
