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

    # Issue 11, item 18: the warning shows the app's frames that held the loop,
    # the innermost first, also those in gems, and none of the loop's own.
    define_method("test_a_stall_warning_shows_the_app_frames_that_held_the_loop_on_#{engine}") do
      app = spawn_server("-b", LOOPBACK, "--engine", engine, "-t", "1:1", "--stall-threshold", "0.05",
                         app_path("stall"))
      fifo = File.join(Dir.mktmpdir("spindle-stall"), "fifo")
      File.mkfifo(fifo)
      client = connect(app)
      client.write(request("GET", "/?fifo=#{fifo}", [["Connection", "close"]]))
      # Issue 65, item 11: at WARN (the server serves on), as LOGGING.md says; it was an ERROR.
      warning = /\] WARN spindle: event loop stalled for \d+ms.*\n(?: {4}.*\n)*? {4}.*stall\.ru:\d+:in .*\n/
      warned = app.wait_for_output(warning)
      release(fifo)
      assert warned, "no stall warning at WARN that shows stall.ru:\n#{app.output}"
      assert_equal 200, client.read_response.status
      frames = stall_frames(app.stderr)
      assert_match(%r{gems/fifo_lib-1\.0/lib/fifo_lib\.rb:\d+:in }, frames.first.to_s,
                   "the innermost frame is where the loop is held, even inside a gem:\n#{app.output}")
      %w[read_when_written wait_for hold_the_loop].each do |method|
        assert(frames.any? { |frame| frame.match?(/:in .*#{method}'/) }, "#{method} is missing:\n#{app.output}")
      end
      loop_frames = frames.grep(%r{lib/spindle/|/async-|/io-event-})
      assert_empty loop_frames, "the loop's own frames say nothing about the stall:\n#{frames.join("\n")}"
    end
  end

  private

  # Lets the app's open(2) of the FIFO return. Non-blocking: with no reader
  # (the app never got there) this fails instead of hanging the test.
  def release(fifo)
    File.open(fifo, File::WRONLY | File::NONBLOCK, &:close)
  rescue Errno::ENXIO
    nil
  end

  # The frames of the first stall warning in the server's stderr.
  def stall_frames(stderr)
    stderr[/event loop stalled for .*\n((?: {4}.*\n)+)/, 1].to_s.lines.map(&:strip)
  end
end
