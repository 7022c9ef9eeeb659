# frozen_string_literal: true

require "rack/files"

# Scenarios "static_1m" and "static_100m": large files through Rack::Files,
# from the directory the scenario made (bench/tmp/static, see
# bench/scenarios/static_files.rb): the server sends a body that answers
# #to_path, with sendfile where it can.
run Rack::Files.new(ENV.fetch("SPINDLE_BENCH_STATIC"))
