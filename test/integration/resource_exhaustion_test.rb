# frozen_string_literal: true

require_relative "../support/spindle_process"

# Running out of file descriptors (EMFILE) must make a server back off accepting
# and keep serving, never crash or spin. Each server runs with a hard limit of
# FD_LIMIT descriptors and is sent more connections than that.
class ResourceExhaustionTest < SpindleIntegrationTest
  FD_LIMIT = 64
  HELD = 80

  %w[blocking threads fibers].each do |engine|
    define_method("test_emfile_backs_off_and_recovers_with_#{engine}") do
      app = spawn_server("--engine", engine, "-b", LOOPBACK, app_path("echo"),
                         rlimit_nofile: [FD_LIMIT, FD_LIMIT])
      established = connect(app)
      assert_equal 200, exchange(established).status
      held = Array.new(HELD) { app.connect }
      app.wait_for_output(/cannot accept/)
      # A connection we already had is still served (blocking may close it to
      # free a descriptor: that engine holds idle connections only as spare).
      assert_equal 200, exchange(established).status unless engine == "blocking"
      held.each(&:close)
      assert_equal 200, roundtrip(request("GET", "/after", [["Connection", "close"]]), app).status
      assert app.alive?
    end
  end

  private

  def exchange(connection)
    connection.write(request("GET", "/"))
    connection.read_response
  end
end
