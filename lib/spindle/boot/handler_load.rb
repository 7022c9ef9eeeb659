# frozen_string_literal: true

# What the rackup handler files (lib/rackup/handler/spindle.rb for rackup 2,
# lib/rack/handler/spindle.rb for Rack 2) load before they register Spindle.
require_relative "native"
require_relative "startup_failure"

begin
  require_relative "rails_boot"
rescue Spindle::Native::MissingExtension => e
  # A path gem on a clone never built: rackup and rails server would print
  # the exception with some 30 lines of their own frames under it.
  Spindle::StartupFailure.exit_or_raise(e)
end

Spindle::RailsBoot.reexec_early
