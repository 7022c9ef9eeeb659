# frozen_string_literal: true

require_relative "../lib/bench/app_db"
require_relative "../lib/bench/profile"
require_relative "../lib/bench/real_app_report"

# Issue 16: a real page with no framework. apps/blog.ru runs one PostgreSQL
# query for the 10 newest posts through a small pool (a connection per
# thread or fiber; pg's waits yield under a fiber scheduler) and renders a
# ~15 KB ERB page. Every server runs it under the real-app bundle
# (bench/apps/bundle/Gemfile) with DB_POOL=16. --profile splits each
# server's CPU time into server and app code, as for rails.
Bench::Scenario.define(
  name: "blog",
  title: "blog: one PostgreSQL query, a 15 KB ERB page",
  description: "GET / on apps/blog.ru: `select ... from posts order by id desc limit 10` through a pool of " \
               "#{Bench::AppDb::POOL} pg connections, then a ~15 KB ERB page. No framework.",
  goal: "≥ 1.3× Puma; spindle-fibers ≥ 1.3× Falcon (issue 16). The seed's Unicycle: 1,296 req/s in 2009.",
  app: "blog.ru",
  path: "/",
  connections: [16],
  processes: [1, 2],
  servers: %w[spindle-* puma falcon unicorn pitchfork],
  gemfile: Bench::Paths::APPS_GEMFILE,
  env: -> { Bench::AppDb.env.call.merge(Bench::Profile.env) },
  report: Bench::RealAppReport,
  trial: Bench::Profile::Trial,
  # As for rails: on Ruby 3.3 YJIT still compiles for seconds after a start.
  # Measured 2 s after it, every server's p99 at 2 processes was 600-900 ms
  # in the first 3 s and up to 77 ms in the next 3 (docs/benchmarks/data/ab/
  # blog-yjit-warm-curve-by-hand-ruby3.3-20261129.txt); steady by 9 s.
  warmup: 10,
  # The first start seeds the database through Rails (~10 s).
  quick: { servers: %w[spindle-fibers puma], processes: [1], budget_s: 90 }
)
