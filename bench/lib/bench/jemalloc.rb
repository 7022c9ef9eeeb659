# frozen_string_literal: true

module Bench
  # jemalloc as Spindle sets it up by default when it is installed
  # (lib/spindle/memory_setup.rb), for running a peer on the same allocator.
  module Jemalloc
    SETTINGS = "jemalloc, MALLOC_CONF=narenas:2"

    module_function

    def path = Dir["/usr/lib/*/libjemalloc.so.2"].first || raise("libjemalloc.so.2 is not installed (apt-get install libjemalloc2)")

    # A command prefix: `env LD_PRELOAD=... MALLOC_CONF=narenas:2`. env(1)
    # execs the server, so the pid the harness started is the server's.
    def env = ["env", "LD_PRELOAD=#{path}", "MALLOC_CONF=narenas:2"]
  end
end
