# frozen_string_literal: true

require "test_helper"
require "spindle/engine/hybrid"
require "spindle/engine/turns"

# How long a hybrid loop serves before it passes the GVL on: the loops'
# slices together come to about Turns::TURN_WAIT, so a loop with a ready client
# waits about that long however many loops there are (a fixed 2 ms slice
# made it 8 ms with 5 loops).
class HybridTurnsTest < Minitest::Test
  Hybrid = Spindle::Engine::Hybrid

  def test_the_others_slices_add_up_to_the_turn_wait
    [2, 3, 5, 16].each do |loops|
      assert_in_delta Spindle::Engine::Turns::TURN_WAIT, Hybrid.slice(loops) * (loops - 1), 1e-12, "#{loops} loops"
    end
  end

  def test_five_loops_take_half_a_millisecond_each
    assert_in_delta 0.0005, Hybrid.slice(5), 1e-12
  end
end
