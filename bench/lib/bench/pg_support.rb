# frozen_string_literal: true

require_relative "paths"
require_relative "http_load"
require_relative "wrk_trial"
require_relative "log"
require_relative "cpu_group"
require_relative "cpu_sampler"

module Bench
  # PostgreSQL for the database scenarios (postgres, pg_mixed): one private
  # server per bench run (test/support/postgres_server.rb: its own data
  # directory, a UNIX socket only, trust auth, stopped at exit), started on
  # the first server start that needs it. The app is examples/postgres/config.ru;
  # bin/spindle gets DATABASE_URL, DB_POOL and BUNDLE_WITH=test (pg and
  # connection_pool live in the server's optional test group).
  module PgSupport
    APP = "../../examples/postgres/config.ru" # relative to bench/apps

    module_function

    def server
      @server ||= begin
        require File.join(Paths::ROOT, "test", "support", "postgres_server")
        Log.info("starting a private PostgreSQL (test/support/postgres_server.rb)")
        group = CpuGroup.new("spindle-bench-postgres")
        at_exit { group.remove } # registered first, so it runs after the server's own stop
        PostgresServer.new(max_connections: 200).start.tap do |pg|
          place(pg, group)
          CpuSampler.database_pid = pg.pid # its CPU is the database's, not "other"
        end
      end
    end

    # Where the server's processes are scheduled, for the run's record: in a
    # cpu cgroup of their own (CpuGroup says why), or where they could not.
    def placement = @placement

    def place(pg, group)
      @placement = if group.add_tree(pg.pid)
                     "in a cpu cgroup of its own (#{group.path}), as a systemd service would be"
                   else
                     "not in a cpu cgroup of its own (#{group.why_not})"
                   end
      Log.info("PostgreSQL: #{@placement}")
    end

    def env(pool)
      -> { { "DATABASE_URL" => server.url, "DB_POOL" => pool.to_s, "BUNDLE_WITH" => "test" } }
    end

    # Opens every pooled connection before measuring: `pool` requests that
    # each hold a connection for 0.2 s, all at once (a blocking engine opens
    # only the one it uses).
    def warm_pool(server_process, pool)
      load = HttpLoad.new(port: server_process.launch.port, concurrency: pool, time_cap: 30)
      result = load.run(Array.new(pool) { ["/sleep?seconds=0.2", "/now"] })
      Log.warn("pool warm-up: #{result.errors.values.sum} errors, #{result.bad_status} bad statuses") if
        result.errors.values.sum.positive? || result.bad_status.positive?
    end
  end
end
