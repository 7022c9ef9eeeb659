# frozen_string_literal: true

require_relative "spindle/version"
require_relative "spindle/config"
require_relative "spindle/log"
require_relative "spindle/boot/app_loader"
require_relative "spindle/process/server"

# Spindle: a Rack server whose concurrency model is a flag. See README.md.
module Spindle
end
