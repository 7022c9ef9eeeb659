# frozen_string_literal: true

# What a deployed app runs with, where it costs nothing here: code loaded once
# at boot, no reloading, no debug pages. No TLS: the suite talks plain HTTP on
# loopback.
Rails.application.configure do
  config.enable_reloading = false
  config.eager_load = true
  config.consider_all_requests_local = false
  config.action_controller.perform_caching = true
  config.active_record.dump_schema_after_migration = false
  config.active_support.report_deprecations = false
end
