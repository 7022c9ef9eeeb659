# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"

# Which server runs where in each round: every server in every place once
# over as many rounds as there are servers, so what running first (or last)
# costs falls on each alike.
class RoundOrderTest < Minitest::Test
  SERVERS = %w[a b c].freeze

  def order(round) = Bench::Runner.order(SERVERS, round)

  def test_each_round_starts_one_server_further_on
    assert_equal [%w[a b c], %w[b c a], %w[c a b], %w[a b c]], (0..3).map { |r| order(r) }
  end

  def test_every_server_runs_in_every_place_once_over_as_many_rounds
    places = SERVERS.map { |s| (0...SERVERS.size).map { |r| order(r).index(s) }.sort }
    assert_equal [[0, 1, 2]] * 3, places
  end

  # A page says which: runs before the rotation recorded no order.
  def test_a_page_says_whether_the_rounds_rotated
    assert_match(/further on/, Bench::Report::Parts.interleaving(round_order: "rotated"))
    assert_match(/in one order/, Bench::Report::Parts.interleaving({}))
  end
end
