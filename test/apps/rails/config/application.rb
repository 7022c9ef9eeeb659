# frozen_string_literal: true

require_relative "boot"

require "rails"
require "active_record/railtie"
require "action_controller/railtie"
require "action_view/railtie"

Bundler.require(*Rails.groups)

module PostsApp
  # The frameworks a CRUD app needs and nothing else: no Action Cable, Active
  # Storage, mailers, jobs or asset pipeline.
  class Application < Rails::Application
    config.load_defaults 7.2

    # On Spindle's fibers and hybrid engines each request runs in a fiber: with
    # :thread, requests sharing a thread would share one database connection and
    # Rails' per-request state. Spindle warns at boot when this line is missing.
    # ISOLATION_LEVEL lets the suite boot the app without it, to see that warning.
    config.active_support.isolation_level = ENV.fetch("ISOLATION_LEVEL", "fiber").to_sym

    config.logger = ActiveSupport::Logger.new($stdout)
    config.log_level = ENV.fetch("RAILS_LOG_LEVEL", "warn")
  end
end
