# frozen_string_literal: true

require_relative "../support/spindle_process"

# Slow readers (slowhttptest's slow-read attack) must not make a server hold
# every response they asked for: past --max-pending-output the server starts
# no app call and accepts nothing until they read (docs/SECURITY.md). Each
# reader asks for RESPONSE_MIB and reads nothing. (Loopback socket buffers
# take about 3 MiB of each response whatever the client's receive window, so
# the responses are larger than that.)
class OutputBudgetTest < SpindleIntegrationTest
  READERS = 40
  RESPONSE_MIB = 8
  MIB = 1024 * 1024
  BUDGET_MIB = 8
  # Unbounded buffering keeps every response: READERS * RESPONSE_MIB. A
  # bounded server holds the budget plus the responses already under way.
  GROWTH_BOUND = READERS * RESPONSE_MIB / 2 * MIB
  RECEIVE_WINDOW = 4096
  ENGINES = { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.freeze

  ENGINES.each do |engine, extra|
    define_method("test_slow_readers_take_bounded_memory_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "--max-pending-output", BUDGET_MIB.to_s,
                         "--write-timeout", "60", "-b", LOOPBACK, app_path("big"))
      before = memory(app, "VmRSS")
      readers = Array.new(READERS) { slow_reader(app) }
      assert app.wait_for_output(/slow readers hold \d+ MiB/), "the server should stop producing:\n#{app.output}"

      readers.each(&:close)
      assert_equal "small\n", roundtrip(request("GET", "/small", [["Connection", "close"]]), app).body
      growth = memory(app, "VmHWM") - before
      assert_operator growth, :<, GROWTH_BOUND, "peak RSS grew by #{growth / MIB} MiB"
    end
  end

  private

  # A client that asks for RESPONSE_MIB and reads none of it, through a
  # small receive window.
  def slow_reader(app)
    socket = Socket.new(:INET, :STREAM)
    socket.setsockopt(:SOCKET, :RCVBUF, RECEIVE_WINDOW)
    socket.connect(Socket.sockaddr_in(app.port, app.host))
    socket.write(request("GET", "/array?mib=#{RESPONSE_MIB}"))
    socket
  end

  # A /proc/PID/status figure in bytes (VmRSS now, VmHWM its peak).
  def memory(app, field)
    Integer(File.read("/proc/#{app.pid}/status")[/^#{field}:\s+(\d+) kB/, 1]) * 1024
  end
end
