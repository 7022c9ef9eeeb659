# frozen_string_literal: true

require "test_helper"
require "spindle/engine/hybrid"
require "spindle/engine/turns"
require_relative "../support/call_counter"

# How long a hybrid loop serves before it passes the GVL on: the loops'
# slices together come to about Turns::TURN_WAIT, so a loop with a ready client
# waits about that long however many loops there are (a fixed 2 ms slice
# made it 8 ms with 5 loops).
class HybridTurnsTest < Minitest::Test
  include CallCounter

  Hybrid = Spindle::Engine::Hybrid
  TakingTurns = Hybrid::TakingTurns

  # What a loop hands its TakingTurns: a handler that serves.
  class Served
    attr_reader :conns

    def initialize = @conns = []

    def serve(conn)
      @conns << conn
      :keep_alive
    end
  end

  def test_the_others_slices_add_up_to_the_turn_wait
    [2, 3, 5, 16].each do |loops|
      assert_in_delta Spindle::Engine::Turns::TURN_WAIT, Hybrid.slice(loops) * (loops - 1), 1e-12, "#{loops} loops"
    end
  end

  def test_five_loops_take_half_a_millisecond_each
    assert_in_delta 0.0005, Hybrid.slice(5), 1e-12
  end

  # A turn goes round the loop's clients once: the slice alone let a loop
  # serve each of its clients several times while the other loops' clients
  # waited (hello at c=16: a p99 of about 50x the median).
  def test_a_clients_second_request_in_a_turn_lets_the_other_loops_go_first
    handler = Served.new
    turns = TakingTurns.new(handler, 3600, shortest: 0) # the slice is never spent here
    a = Object.new
    b = Object.new

    assert_equal 0, counting_passes { [a, b].each { |conn| assert_equal :keep_alive, turns.serve(conn) } }
    assert_equal 1, counting_passes { turns.serve(a) }, "a's second request in the turn"
    assert_equal 0, counting_passes { turns.serve(b) }, "the new turn has not served b yet"
    assert_equal 1, counting_passes { turns.serve(b) }
    assert_equal [a, b, a, b, b], handler.conns, "every request is served, after the pass"
  end

  # Until a turn has lasted SHORTEST_TURN of its slice, a repeat does not
  # end it: that bounds what the passes cost (a quarter of hello's
  # throughput at c=16 on Ruby 3.3 when every repeat passed).
  def test_a_young_turn_serves_a_client_again
    turns = TakingTurns.new(Served.new, 3600) # shortest turn: 900 s
    a = Object.new

    assert_equal 0, counting_passes { 3.times { turns.serve(a) } }
  end

  # Passing at the end of a slice starts a new turn too: the clients served
  # before it may be served again at once.
  def test_a_spent_slice_starts_a_turn_of_its_own
    turns = TakingTurns.new(Served.new, 0) # spent after every request
    a = Object.new

    assert_equal 3, counting_passes { 3.times { turns.serve(a) } }, "one pass per request, not two"
  end
end
