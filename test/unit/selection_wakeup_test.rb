# frozen_string_literal: true

require "minitest/autorun"
require "spindle/config"
require "spindle/engine/deadlines"
require "spindle/engine/selection"

# A threads-engine pool thread tells the reactor it is free by waking its
# selector; when that comes just after the loop ended and closed the
# selector, the wakeup raised IOError, which killed the pool thread and
# failed the worker (a mold-to-be draining for a refork exited with 1).
class SelectionWakeupTest < Minitest::Test
  def test_wakeup_after_close_is_a_no_op
    selection = Spindle::Engine::Selection.new([], nil, Spindle::Engine::Deadlines.new(Spindle::Config.new({})),
                                               Spindle::Engine::Connections.new)
    selection.wakeup
    selection.close

    assert_nil selection.wakeup
  end
end
