# frozen_string_literal: true

require_relative "paths"
require_relative "pg_support"
require_relative "command"
require_relative "setup"
require_relative "log"

module Bench
  # The database of the real-app scenarios (rails, blog): one database on the
  # run's private PostgreSQL (Bench::PgSupport), its schema loaded and its 20
  # posts seeded by the Rails app itself (`bin/rails db:create db:schema:load
  # db:seed`, test/apps/rails/db/seeds.rb), once per run, before the first
  # server starts. The blog app reads the same table.
  module AppDb
    RAILS_APP = File.join(Paths::ROOT, "test", "apps", "rails")
    SECRET_KEY_BASE = "spindle-bench-secret-key-base-" * 4
    POOL = 16 # a connection per concurrent request at the scenarios' c=16, on every server alike

    module_function

    def url
      @url ||= PgSupport.server.url.sub(%r{:///postgres\?}, ":///bench_apps?").tap { |u| prepare(u) }
    end

    # What every server of the real-app scenarios gets (called at each start).
    def env
      -> { { "DATABASE_URL" => url, "DB_POOL" => POOL.to_s, "RAILS_ENV" => "production", "SECRET_KEY_BASE" => SECRET_KEY_BASE } }
    end

    def prepare(url)
      Setup.bundle!(Paths::APPS_GEMFILE)
      Log.info("loading the posts schema and 20 posts (test/apps/rails: db:create db:schema:load db:seed)")
      env = { "BUNDLE_GEMFILE" => Paths::APPS_GEMFILE, "DATABASE_URL" => url, "RAILS_ENV" => "production",
              "SECRET_KEY_BASE" => SECRET_KEY_BASE, "RUBYOPT" => nil, "DISABLE_DATABASE_ENVIRONMENT_CHECK" => "1" }
      result = Command.capture(env, ["bundle", "exec", RbConfig.ruby, "bin/rails", "db:create", "db:schema:load", "db:seed"],
                               timeout: 300, chdir: RAILS_APP)
      raise "seeding the app database failed: #{result.output.lines.last(5).join}" unless result.ok
    end
  end
end
