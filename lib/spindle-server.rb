# frozen_string_literal: true

# What `Bundler.require` loads for `gem "spindle-server"` in an app's Gemfile.
# Only the version: the server is started by `spindle`, `rackup -s spindle` or
# `rails server -u spindle`, and those load what they need. Loading the server
# here would pull nio4r, the C extension and the engines into every process
# that requires the bundle (rake tasks, consoles, workers).
#
# Without this file Bundler would fall back to `require "spindle/process/server"`,
# which does exactly that.
require_relative "spindle/version"
