# frozen_string_literal: true

require_relative "../lib/bench/app_db"
require_relative "../lib/bench/profile"
require_relative "../lib/bench/real_app_report"

# Issue 16: the Rails 7.2 app of test/apps/rails (ActiveRecord on
# PostgreSQL, production mode, 20 posts), served by every engine and peer
# under one bundle (bench/apps/bundle/Gemfile: the app's gems and the peers),
# DB_POOL=16. `rails` is the index of all 20 posts, `rails-show` one post.
# A server that sends 103 Early Hints first is refused, not measured
# (Bench::HttpProbe.refusal): wrk would count each 103 as a response.
# --profile adds, per engine, where the server process's CPU time went
# (Bench::Profile).
{ "rails" => ["/posts", "the index: 20 rows"], "rails-show" => ["/posts/1", "one post"] }.each do |name, (path, what)|
  Bench::Scenario.define(
    name: name,
    title: "Rails 7.2: GET #{path} (#{what})",
    description: "test/apps/rails (a Rails 7.2 scaffold on PostgreSQL), production mode, GET #{path}: #{what}. " \
                 "Every server under bench/apps/bundle/Gemfile, DB_POOL=#{Bench::AppDb::POOL}.",
    goal: "≥ 1.2× Puma with p99 ≤ Puma's, at 1 and 2 processes, on both Rubies (issue 16).",
    app: "../../test/apps/rails/config.ru",
    path: path,
    connections: [16],
    processes: [1, 2],
    servers: %w[spindle-* puma puma-jemalloc falcon unicorn pitchfork],
    gemfile: Bench::Paths::APPS_GEMFILE,
    env: -> { Bench::AppDb.env.call.merge(Bench::Profile.env) },
    report: Bench::RealAppReport,
    trial: Bench::Profile::Trial,
    # Each worker compiles its own YJIT code and fills its own caches: after
    # 2 s of warm-up at 2 processes on Ruby 3.3, every server's p99 was
    # 200-700 ms (a worker still cold); after 10 s, 21-60 ms.
    warmup: 10,
    warm_pools: true, # Rails opens its pool's connections as requests need them
    # Rails boots in seconds and the first start seeds the database (~10 s).
    quick: { servers: %w[spindle-threads puma], processes: [1], budget_s: 120 }
  )
end
