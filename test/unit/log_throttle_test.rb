# frozen_string_literal: true

require "minitest/autorun"
require "stringio"
require "spindle/log"

# Lines the network can cause at any rate are logged once per interval, with
# the count of those not logged in between.
class LogThrottleTest < Minitest::Test
  def setup
    @err = StringIO.new
    @log = Spindle::Log.new(out: StringIO.new, err: @err)
  end

  def test_within_the_interval_only_the_first_line_is_logged
    throttle = Spindle::Log::Throttle.new(@log, 3600)
    3.times { |i| throttle.error("refused #{i}") }

    assert_equal 1, @err.string.lines.size
    assert_includes @err.string, "refused 0"
  end

  def test_a_warning_is_throttled_alike
    throttle = Spindle::Log::Throttle.new(@log, 3600)
    2.times { |i| throttle.warn("shed #{i}") }

    assert_equal ["spindle: shed 0"], @err.string.lines.map { |l| l.chomp[/spindle: .*/] }
    assert_includes @err.string, "WARN"
  end

  def test_the_next_line_counts_those_not_logged
    throttle = Spindle::Log::Throttle.new(@log, 3600)
    2.times { throttle.error("refused") }
    throttle.instance_variable_set(:@logged_at, throttle.instance_variable_get(:@logged_at) - 3600)
    throttle.error("refused again")

    assert_includes @err.string.lines.last, "refused again (1 more since the last line)"
  end
end
