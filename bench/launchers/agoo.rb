# frozen_string_literal: true

# Starts Agoo on one rackup file with an explicit thread and worker count.
# The `agoo` executable passes workers but drops the thread count when given a
# .ru file, so the harness starts Agoo through its Ruby API instead.
#
#   ruby launchers/agoo.rb PORT THREADS WORKERS APP.ru
require "rack"
require "agoo"

port, threads, workers, rackup = ARGV
abort "usage: agoo.rb PORT THREADS WORKERS APP.ru" unless rackup

app = Rack::Builder.parse_file(rackup)
app = app.first if app.is_a?(Array) # Rack 2 returns [app, options]

# An empty root: Agoo would otherwise serve ./public itself, and the static
# scenario measures Rack::Files, not Agoo's built-in file server.
empty_root = File.expand_path("../tmp/agoo-root", __dir__)
Dir.mkdir(empty_root) unless Dir.exist?(empty_root)

# Every log state off: a log line per request would be measured, not the server.
Agoo::Log.configure(console: false,
                    states: %i[INFO DEBUG connect request response eval push].to_h { |s| [s, false] })
Agoo::Server.init(Integer(port), empty_root,
                  bind: ["http://127.0.0.1:#{port}"],
                  thread_count: Integer(threads),
                  worker_count: Integer(workers))
# poll_timeout stays at Agoo's default (0.1 s) like every other peer setting;
# its handler queue can wait that long for work, which shows in p99.
Agoo::Server.handle(nil, "**", app)
Agoo::Server.start
# With handler threads, start returns at once and the threads do the work.
sleep
