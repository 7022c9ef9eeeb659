# frozen_string_literal: true

require "test_helper"
require "spindle/engine/loop_share"

# hybrid's loops split --max-connections: the process holds what the flag
# says, as under every other engine.
class LoopShareTest < Minitest::Test
  def share_of(loops, max)
    share = Spindle::Engine::LoopShare.new(loops)
    tables = Array.new(loops) { {}.compare_by_identity.tap { |table| share.join(table) } }
    tables.map { |table| share.cap(table, max) }
  end

  def test_the_loops_shares_add_up_to_the_cap
    assert_equal [820, 819, 819, 819, 819], share_of(5, 4096)
    assert_equal [10, 10], share_of(2, 20)
    assert_equal 4096, share_of(5, 4096).sum
  end

  def test_every_loop_may_hold_one_even_under_a_tiny_cap
    assert_equal [1, 1, 1], share_of(3, 2)
  end

  def test_a_table_that_never_joined_is_refused
    share = Spindle::Engine::LoopShare.new(2)
    assert_raises(ArgumentError) { share.cap({}, 10) }
  end
end
