# frozen_string_literal: true

require_relative "paths"
require_relative "pg_support"
require_relative "command"
require_relative "setup"
require_relative "log"

module Bench
  # The database of the real-app scenarios (rails, blog, rails8): one database
  # per Rails app on the run's private PostgreSQL (Bench::PgSupport), its
  # schema loaded and its 20 posts seeded by the Rails app itself (`bin/rails
  # db:create db:schema:load db:seed`, test/apps/rails/db/seeds.rb), once per
  # run, before the first server starts. The blog app reads the Rails 7.2
  # app's table.
  module AppDb
    SECRET_KEY_BASE = "spindle-bench-secret-key-base-" * 4
    POOL = 16 # a connection per concurrent request at the scenarios' c=16, on every server alike
    RAILS_SEEDS = File.join(Paths::ROOT, "test", "apps", "rails", "db", "seeds.rb")

    # A Rails app: where it lives, the bundle every server runs it under,
    # its database, the bin/rails commands that prepare that database (and
    # what else production needs), and what its servers get besides.
    App = Struct.new(:dir, :gemfile, :database, :prepare, :env, keyword_init: true)

    # test/apps/rails (Rails 7.2): its config/database.yml reads DB_POOL.
    RAILS = App.new(dir: File.join(Paths::ROOT, "test", "apps", "rails"), gemfile: Paths::APPS_GEMFILE,
                    database: "bench_apps", prepare: [%w[db:create db:schema:load db:seed]], env: {}).freeze
    # test/apps/rails8 (Rails 8.1), as `rails new` made it: its pool is
    # RAILS_MAX_THREADS (max_connections), it logs every request to stdout
    # at info (warn keeps the log, not the server, out of the figures), its
    # layout needs the precompiled assets, and it has no seeds of its own: it
    # gets the Rails 7.2 app's 20 posts, so the two index pages list the same.
    RAILS8 = App.new(dir: File.join(Paths::ROOT, "test", "apps", "rails8"), gemfile: Paths::RAILS8_GEMFILE,
                     database: "bench_rails8",
                     prepare: [%w[db:create db:schema:load assets:precompile], ["runner", RAILS_SEEDS]],
                     env: { "RAILS_MAX_THREADS" => POOL.to_s, "RAILS_LOG_LEVEL" => "warn" }).freeze

    module_function

    def url(app = RAILS)
      (@urls ||= {})[app.database] ||=
        PgSupport.server.url.sub(%r{:///postgres\?}, ":///#{app.database}?").tap { |u| prepare(app, u) }
    end

    # What every server of the real-app scenarios gets (called at each start).
    def env(app = RAILS)
      lambda do
        { "DATABASE_URL" => url(app), "DB_POOL" => POOL.to_s, "RAILS_ENV" => "production",
          "SECRET_KEY_BASE" => SECRET_KEY_BASE }.merge(app.env)
      end
    end

    def prepare(app, url)
      Setup.bundle!(app.gemfile)
      name = Paths.relative(app.dir)
      Log.info("loading the posts schema and 20 posts (#{name}: #{app.prepare.map { |c| c.join(' ') }.join('; ')})")
      env = { "BUNDLE_GEMFILE" => app.gemfile, "DATABASE_URL" => url, "RAILS_ENV" => "production",
              "SECRET_KEY_BASE" => SECRET_KEY_BASE, "RUBYOPT" => nil, "DISABLE_DATABASE_ENVIRONMENT_CHECK" => "1" }
      app.prepare.each do |command|
        result = Command.capture(env, ["bundle", "exec", RbConfig.ruby, "bin/rails", *command], timeout: 300, chdir: app.dir)
        raise "preparing #{name}'s database failed (bin/rails #{command.join(' ')}): #{result.output.lines.last(5).join}" unless result.ok
      end
    end
  end
end
