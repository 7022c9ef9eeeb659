# frozen_string_literal: true

require "test_helper"
require "spindle/request/queue_time"
require "spindle/http/forwarded"
require "support/allocations"

# QueueTime: the wait before the app call, on the server's clock or a
# trusted proxy's stamp, whichever starts earlier.
class QueueTimeUnitTest < Minitest::Test
  include Allocations
  TRUSTED = Spindle::HTTP::Forwarded.new(Spindle::HTTP::Forwarded.parse_networks(%w[10.0.0.0/8]))
  NOW = 1_000.0 # monotonic

  def test_a_stamps_unit_is_read_from_its_magnitude
    seconds = 1_733_430_000.25
    {
      "t=1733430000.25" => seconds, "1733430000.25" => seconds,
      "t=1733430000250" => seconds, "1733430000250" => seconds,
      "t=1733430000250000" => seconds, " t=1733430000250000 " => seconds,
      "t=1733430000250000000" => seconds,
    }.each { |value, expected| assert_in_delta expected, Spindle::QueueTime.stamp(value), 1e-3, value }
  end

  def test_what_names_no_time_is_no_stamp
    ["", "t=", "t=abc", "t=-5", "t=0", "x=1733430000", "1733430000 junk", "t=1e9", "1" * 40, nil].each do |value|
      assert_nil Spindle::QueueTime.stamp(value), value.inspect
    end
  end

  def test_a_trusted_proxys_earlier_stamp_wins
    env = { "REMOTE_ADDR" => "10.1.2.3", "HTTP_X_REQUEST_START" => "t=#{((Time.now.to_f - 30) * 1e6).to_i}" }
    assert_in_delta 30, Spindle::QueueTime.new(TRUSTED).measure(env, NOW - 0.5, NOW), 5
  end

  def test_x_queue_start_counts_as_x_request_start
    env = { "REMOTE_ADDR" => "10.1.2.3", "HTTP_X_QUEUE_START" => ((Time.now.to_f - 30) * 1000).to_i.to_s }
    assert_in_delta 30, Spindle::QueueTime.new(TRUSTED).measure(env, NOW, NOW), 5
  end

  def test_the_servers_clock_wins_when_it_saw_the_request_first
    env = { "REMOTE_ADDR" => "10.1.2.3", "HTTP_X_REQUEST_START" => "t=#{Time.now.to_f - 0.001}" }
    assert_equal 2.0, Spindle::QueueTime.new(TRUSTED).measure(env, NOW - 2.0, NOW)
  end

  def test_an_untrusted_peers_stamp_or_none_trusted_is_never_read
    stamp = "t=#{Time.now.to_f - 30}"
    assert_equal 0.5,
                 Spindle::QueueTime.new(TRUSTED).measure({ "REMOTE_ADDR" => "192.0.2.1", "HTTP_X_REQUEST_START" => stamp },
                                                         NOW - 0.5, NOW)
    assert_equal 0.5,
                 Spindle::QueueTime.new(nil).measure({ "REMOTE_ADDR" => "10.1.2.3", "HTTP_X_REQUEST_START" => stamp },
                                                     NOW - 0.5, NOW)
  end

  def test_without_a_stamp_measuring_allocates_nothing
    queue_time = Spindle::QueueTime.new(TRUSTED)
    env = { "REMOTE_ADDR" => "10.1.2.3" }
    allocations { 100.times { queue_time.measure(env, NOW - 0.5, NOW) } } # warm: first calls make their caches
    assert_operator allocations { 100.times { queue_time.measure(env, NOW - 0.5, NOW) } }, :<, 10,
                    "not one per call (the test's own odd objects aside)"
  end

  def test_a_stamp_from_the_future_is_no_wait
    env = { "REMOTE_ADDR" => "10.1.2.3", "HTTP_X_REQUEST_START" => "t=#{Time.now.to_f + 30}" }
    assert_equal 0.0, Spindle::QueueTime.new(TRUSTED).measure(env, nil, NOW)
    assert_equal 0.0, Spindle::QueueTime.new(TRUSTED).measure({}, NOW + 1, NOW), "never negative"
  end
end
