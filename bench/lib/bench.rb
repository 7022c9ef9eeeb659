# frozen_string_literal: true

# The benchmark harness. bench/run loads this file; it loads the server
# registry (bench/servers.rb) and the scenarios (bench/scenarios/*.rb).
require "rbconfig"
require_relative "bench/paths"
require_relative "bench/log"
require_relative "bench/options"
require_relative "bench/setup"
require_relative "bench/lane"
require_relative "bench/profile"
require_relative "bench/run_lock"
require_relative "bench/registry"
require_relative "bench/versions"
require_relative "bench/baseline"
require_relative "bench/nginx_config"
require_relative "bench/scenario"
require_relative "bench/runner"
require_relative "bench/quick_shape"
require_relative "bench/overrun"
require_relative "bench/timing"
require_relative "bench/report/writer"
require_relative "bench/jemalloc"
require_relative "../servers"
