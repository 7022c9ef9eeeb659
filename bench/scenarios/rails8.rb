# frozen_string_literal: true

require_relative "../lib/bench/app_db"
require_relative "../lib/bench/profile"
require_relative "../lib/bench/real_app_report"

# Issue 67: the Rails 8 app of test/apps/rails8 (Rails 8.1 as `rails new -d
# postgresql` makes it, ActiveRecord on PostgreSQL, production mode, the same
# 20 posts as rails), served by every engine and the peers under one bundle
# (bench/apps/rails8/Gemfile: the app's own Gemfile and the peers), with a
# pool of 16. GET /posts, the scaffold's index, as in rails: what a team
# starting an app today serves. Rails 8 needs Ruby 3.2: bench/run --ruby 3.4
# rails8 (or 3.3).
Bench::Scenario.define(
  name: "rails8",
  title: "Rails 8.1: GET /posts (the index: 20 rows)",
  description: "test/apps/rails8 (a Rails 8.1 app as rails new makes it, on PostgreSQL), production mode, " \
               "GET /posts: the index of 20 posts. Every server under bench/apps/rails8/Gemfile, " \
               "RAILS_MAX_THREADS=#{Bench::AppDb::POOL}.",
  goal: "≥ 1.2× Puma with p99 ≤ Puma's, at 1 and 2 processes, on the newest Ruby (issues 16, 67).",
  app: "../../test/apps/rails8/config.ru",
  path: "/posts",
  connections: [16],
  processes: [1, 2],
  servers: %w[spindle-* puma falcon],
  gemfile: Bench::Paths::RAILS8_GEMFILE,
  min_ruby: "3.2",
  env: -> { Bench::AppDb.env(Bench::AppDb::RAILS8).call.merge(Bench::Profile.env) },
  report: Bench::RealAppReport,
  trial: Bench::Profile::Trial,
  # As for rails: every worker compiles its own YJIT code and opens its own
  # pool's connections as requests need them.
  warmup: 10,
  warm_pools: true,
  # The first start prepares the database and compiles the assets (three
  # Rails boots, ~20 s).
  quick: { servers: %w[spindle-threads puma], processes: [1], budget_s: 150 }
)
