# frozen_string_literal: true

# PostgreSQL from a Spindle app. Serve it with the fibers engine so that waiting
# queries yield instead of holding the process:
#
#   DATABASE_URL=postgresql:///postgres DB_POOL=10 \
#     bin/spindle --engine fibers examples/postgres/config.ru
#
#   curl localhost:9292/sleep?seconds=1   # select pg_sleep(1)
#   curl localhost:9292/now               # select now()
#
# docs/POSTGRES.md explains pool size, engines and fork safety.
require "json"
require "rack/utils"
require_relative "db"

ROUTES = {
  "/now" => ->(_q) { DB.query("select now() as now").first },
  "/sleep" => ->(q) { DB.query("select pg_sleep($1::float8) as slept", [q.fetch("seconds", "1")]).first },
  # The same, ended by the server at the request's deadline (--request-timeout),
  # by a statement_timeout from env["spindle.deadline"].
  "/sleep_by_deadline" => lambda { |q, env|
    DB.query("select pg_sleep($1::float8) as slept", [q.fetch("seconds", "1")],
             deadline: env["spindle.deadline"]).first
  },
  # Waits until nobody holds the advisory lock KEY exclusively: lets a test hold
  # many requests inside the database at once and release them together.
  "/wait" => lambda { |q|
    key = Integer(q.fetch("key"))
    DB.query("select pg_advisory_lock_shared($1), pg_advisory_unlock_shared($1)", [key])
    { "waited" => key }
  },
  "/ping" => ->(_q) { { "pong" => true } },
}.freeze

app = lambda do |env|
  route = ROUTES[env["PATH_INFO"]]
  return [404, { "content-type" => "text/plain" }, ["not found\n"]] unless route

  query = Rack::Utils.parse_query(env["QUERY_STRING"])
  body = JSON.generate(route.arity == 2 ? route.call(query, env) : route.call(query))
  [200, { "content-type" => "application/json" }, [body]]
end

run app
