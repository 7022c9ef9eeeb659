# frozen_string_literal: true

require "socket"
require_relative "../support/spindle_process"

# Clients that reset (RST) at every stage: mid-head, mid-body, mid-response and
# during a hijack. Afterwards the server still serves, and its descriptor and
# thread counts return to what they were: nothing leaked.
class ClientResetsTest < SpindleIntegrationTest
  ROUNDS = 10
  STAGES = {
    mid_head: "GET / HTTP/1.1\r\nHo",
    mid_body: "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 200000\r\n\r\n#{'b' * 70_000}",
    mid_response: "GET /big HTTP/1.1\r\nHost: a\r\n\r\n",
    during_hijack: "GET /hijack HTTP/1.1\r\nHost: a\r\n\r\nping",
  }.freeze

  { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [] }.each do |engine, extra|
    define_method("test_resets_at_every_stage_leak_nothing_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "-b", LOOPBACK, app_path("resets"))
      3.times { assert_equal 200, normal_request(app).status }
      baseline = wait_for_stable_counts(app)
      ROUNDS.times { STAGES.each_value { |bytes| reset_after(app, bytes) } }
      assert_equal 200, normal_request(app).status
      last = nil
      # At most the baseline: a leak adds descriptors or threads; something
      # transient at the baseline (a closing socket) may be gone by now.
      wait_until("descriptors and threads back to #{baseline}", deadline: 15, interval: 0.1) do
        (last = counts(app)).zip(baseline).all? { |now, before| now <= before }
      end
    rescue Minitest::Assertion
      raise Minitest::Assertion, "#{$!.message}; last seen #{last.inspect}"
    end
  end

  private

  def normal_request(app) = roundtrip(request("GET", "/", [["Connection", "close"]]), app)

  # Sends bytes, reads a little of whatever comes back, then resets.
  def reset_after(app, bytes)
    socket = Socket.tcp(app.host, app.port)
    socket.write(bytes)
    socket.wait_readable(0.05) && socket.read_nonblock(1024, exception: false)
    socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack("ii"))
  ensure
    socket&.close
  end

  def counts(app)
    [Dir["/proc/#{app.pid}/fd/*"].size, Dir["/proc/#{app.pid}/task/*"].size]
  end

  def wait_for_stable_counts(app)
    previous = counts(app)
    wait_until("counts stable", deadline: 15, interval: 0.1) do
      current = counts(app)
      stable = current == previous
      previous = current
      stable
    end
    previous
  end
end
