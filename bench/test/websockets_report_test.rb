# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"
require_relative "../scenarios/websockets"

# The websockets page's verdict: a server completes only when every socket it
# opened stayed open through the hold and got the broadcast.
class WebSocketsReportTest < Minitest::Test
  REPORT = Bench::WebSockets::Report

  def round(open_after: 1000, received: 1000)
    { sockets_wanted: 1000, hold_s: 60, requests_per_sec: 100.0, latency_ms: { p99: 1.0 },
      open: { opened: 1000, seconds: 0.5 }, after_hold: { open: open_after },
      broadcast: { received: received, posts: 4, workers: { "1" => 500, "2" => 500 } },
      before: { pss_kib: 50_000 }, with_sockets: { pss_kib: 60_000, threads: 10 },
      under_sockets: { requests_per_sec: 90.0, latency_ms: { p99: 2.0 }, errors: { read: 0 }, bad_status: 0 } }
  end

  def test_every_socket_open_and_reached_completes
    summary = REPORT.summarize([round])
    assert_equal "yes", REPORT.completes(summary)
    assert_in_delta 10_240.0, summary[:bytes_per_socket] # (60,000 - 50,000) KiB over 1,000 sockets
  end

  def test_a_socket_closed_during_the_hold_or_missed_by_the_broadcast_fails_it
    verdict = REPORT.completes(REPORT.summarize([round(open_after: 999, received: 506)]))
    assert_match(/\A\*\*no\*\*/, verdict)
    assert_includes verdict, "open after the hold 999 of 1,000"
    assert_includes verdict, "received the broadcast 506 of 1,000"
  end
end
