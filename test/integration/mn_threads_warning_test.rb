# frozen_string_literal: true

require_relative "../support/spindle_process"

# RUBY_MN_THREADS=1 stalled the threads engine under load on Ruby 3.3.8
# (docs/ENGINES.md): a real server started with it says so in its log, and
# one on another engine does not. Ruby reads the variable at its own start,
# so only the server started with it runs M:N threads.
class MnThreadsWarningTest < SpindleIntegrationTest
  WARNING = /\] WARN spindle: RUBY_MN_THREADS=1 is set, and Ruby's M:N threads stalled the threads engine/
  MN = { "RUBY_MN_THREADS" => "1" }.freeze

  def setup
    skip "Ruby #{RUBY_VERSION} has no M:N threads (3.3 and later)" if RUBY_VERSION < "3.3"
  end

  def test_the_threads_engine_warns_at_boot
    server = spawn_server("--engine", "threads", "-b", LOOPBACK, env: MN)
    assert server.wait_for_output(WARNING), server.output
    assert_equal 200, roundtrip(request("GET", "/"), server).status
  end

  def test_the_fibers_engine_does_not_warn
    server = spawn_server("--engine", "fibers", "-b", LOOPBACK, env: MN)
    assert_equal 200, roundtrip(request("GET", "/"), server).status
    refute_match(/RUBY_MN_THREADS/, server.output)
  end
end
