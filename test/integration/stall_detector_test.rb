# frozen_string_literal: true

require_relative "../support/spindle_process"

# Code that holds a fiber engine's event loop is reported with where it is stuck.
class StallDetectorTest < SpindleIntegrationTest
  %w[fibers hybrid].each do |engine|
    define_method("test_a_stalled_loop_is_reported_with_its_backtrace_on_#{engine}") do
      app = spawn_server("-b", LOOPBACK, "--engine", engine, "-t", "1:1", "--stall-threshold", "0.05",
                         app_path("spin"))
      release = File.join(Dir.mktmpdir("spindle-spin"), "go")
      client = connect(app)
      client.write(request("GET", "/?release=#{release}", [["Connection", "close"]]))
      app.wait_for_output(/event loop stalled for \d+ms.*\n.*spin\.ru/)
      File.write(release, "")
      assert_equal 200, client.read_response.status
    end
  end
end
