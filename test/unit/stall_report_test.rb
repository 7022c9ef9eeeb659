# frozen_string_literal: true

require "test_helper"
require "async"
require "spindle/engine/stall_report"
require_relative "../support/waiting"

# The stall warning's words (issue 65, item 11). A stack that holds only the
# loop's own frames (async's scheduler in `run_once!`, its selector, Spindle's
# files) once came out as the place the loop was held; the warning now says
# that no app frame was found.
class StallReportTest < Minitest::Test
  include Waiting

  ROOT = Spindle::Engine::StallReport::SPINDLE_ROOT
  FIBER_LOOP = "#{ROOT}/lib/spindle/engine/fiber_loop.rb:79:in `block in run'".freeze
  HANDLER = "#{ROOT}/lib/spindle/request/handler.rb:120:in `call_app'".freeze
  APP = "/srv/app/app/controllers/reports_controller.rb:12:in `index'"

  def setup
    @report = Spindle::Engine::StallReport.new(0.25)
  end

  def teardown
    @loop&.kill&.join
  end

  def test_a_stack_of_the_loops_own_frames_says_no_app_frame_was_found
    message = @report.message(0.312, 0.9, idle_loop_backtrace)

    assert_match(/\Aevent loop stalled for 312ms \(threshold 250ms, on the CPU for 90% of it\); /, message)
    assert_includes message, "no app frame was found on the loop's thread"
    # Ruby 3.4 writes a frame's method as 'Async::Scheduler#run_once!', earlier ones as `run_once!'.
    assert_match(%r{^    .*/async-[^/]+/lib/async/scheduler\.rb:\d+:in [`'](?:Async::Scheduler#)?run_once!'$}, message,
                 "the loop's frames are still shown")
  end

  def test_rubys_own_frames_beside_the_loops_are_no_app_frame
    backtrace = ["<internal:kernel>:187:in `loop'", FIBER_LOOP, *idle_loop_backtrace]
    assert_includes @report.message(0.3, nil, backtrace), "no app frame was found"
  end

  def test_the_apps_frames_are_shown_without_the_loops
    backtrace = [APP, "<internal:kernel>:187:in `loop'", HANDLER, *idle_loop_backtrace]
    message = @report.message(0.3, nil, backtrace)

    refute_includes message, "no app frame"
    assert_equal ["event loop stalled for 300ms (threshold 250ms); the loop's thread is at:", "    #{APP}",
                  "    <internal:kernel>:187:in `loop'"], message.lines.map(&:chomp)
  end

  private

  # A real Async loop's stack while it waits in its selector, under a frame
  # of Spindle's (this file's own frames stand for the code that started it).
  def idle_loop_backtrace
    @loop = Thread.new { Sync { sleep } }
    frames = wait_until("the loop waits in its selector") do
      backtrace = @loop.backtrace
      backtrace if backtrace&.any? { |frame| frame.include?("run_once") }
    end
    frames.reject { |frame| frame.start_with?(__FILE__) } + [FIBER_LOOP]
  end
end
