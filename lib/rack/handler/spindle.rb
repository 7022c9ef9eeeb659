# frozen_string_literal: true

# Found by Rack 2's rackup: `rackup -s spindle`, `rails server -u spindle`.
require "rack/handler"
require_relative "../../spindle/boot/handler_load"

module Rack
  module Handler
    # A module of its own (not Spindle::RackHandler under another name):
    # rackup and `rails server` name the server after it ("=> Booting Spindle").
    module Spindle
      extend ::Spindle::RackHandler::Entry
    end
    register :spindle, Spindle
  end
end
