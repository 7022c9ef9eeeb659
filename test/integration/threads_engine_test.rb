# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"

# What only the threads engine promises: a slow or idle client never holds a
# thread, so more keep-alive connections than threads are all served, and a
# request whose head trickles in does not block the others.
class ThreadsEngineTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, "--engine", "threads", "-t", "1:2", app_path("all")

  def test_more_keep_alive_connections_than_threads_are_all_served
    connections = Array.new(12) { connect }
    2.times do |round|
      connections.each_with_index do |connection, i|
        connection.write(request("GET", "/ka/#{round}/#{i}"))
        response = connection.read_response
        assert_equal "/ka/#{round}/#{i}", JSON.parse(response.body)["path"]
      end
    end
  end

  def test_a_half_sent_head_does_not_hold_a_thread
    slow = Array.new(4) do
      connection = connect
      connection.write("GET /slow HTTP/1.1\r\nHost: a\r\nX-Incomplete: ")
      connection
    end
    3.times { assert_still_serving }
    slow.each(&:close)
  end

  def test_a_half_sent_body_does_not_hold_a_thread
    slow = Array.new(4) do
      connection = connect
      connection.write(request("POST", "/slow-body", [["Content-Length", "1000"]]) + "partial")
      connection
    end
    3.times { assert_still_serving }
    slow.each(&:close)
  end

  def test_requests_run_in_parallel_up_to_the_thread_count
    first = rendezvous
    second = rendezvous
    a = connect
    b = connect
    a.write(request("GET", "/gate?path=#{first.path}"))
    b.write(request("GET", "/gate?path=#{second.path}"))
    # Both apps are inside a request at the same time, or one await times out.
    visits = [first.await("entered"), second.await("entered")]
    visits.each(&:release)
    assert_equal 200, a.read_response.status
    assert_equal 200, b.read_response.status
  end

  def test_env_reports_multithread
    assert_equal true, JSON.parse(roundtrip(request("GET", "/env")).body)["multithread"]
  end
end
