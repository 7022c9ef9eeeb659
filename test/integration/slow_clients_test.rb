# frozen_string_literal: true

require_relative "../support/spindle_process"

# Slow clients (a head trickled in, a body never finished) must not starve a
# normal client, in any engine, even when there are more of them than threads.
class SlowClientsTest < SpindleIntegrationTest
  SLOW = 12

  { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["-t", "2:2"] }.each do |engine, extra|
    define_method("test_slowloris_and_slow_bodies_do_not_starve_others_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "-b", LOOPBACK, app_path("echo"))
      slow_heads = Array.new(SLOW) { started(app, "GET /slow HTTP/1.1\r\nHost: a\r\nX-Slow: ") }
      slow_bodies = Array.new(SLOW) do
        started(app, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n#{'x' * 10}")
      end
      3.times do
        assert_equal 200, roundtrip(request("GET", "/normal", [["Connection", "close"]]), app).status
      end
      slow_heads.first.write("done\r\n\r\n")
      assert_equal 200, slow_heads.first.read_response.status, "a slow head is served once complete"
      (slow_heads + slow_bodies).each(&:close)
    end
  end

  private

  def started(app, bytes)
    connection = connect(app)
    connection.write(bytes)
    connection
  end
end
