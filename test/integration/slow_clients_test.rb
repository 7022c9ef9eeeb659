# frozen_string_literal: true

require "digest"
require_relative "../support/spindle_process"

# Slow clients (a head trickled in, a body never finished) must not starve a
# normal client, in any engine, even when there are more of them than threads.
class SlowClientsTest < SpindleIntegrationTest
  SLOW = 12

  { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
    define_method("test_slowloris_and_slow_bodies_do_not_starve_others_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "-b", LOOPBACK, app_path("echo"))
      slow_heads = Array.new(SLOW) { started(app, "GET /slow HTTP/1.1\r\nHost: a\r\nX-Slow: ") }
      slow_bodies = Array.new(SLOW) do
        started(app, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n#{'x' * 10}")
      end
      3.times do
        assert_equal 200, roundtrip(request("GET", "/normal", [["Connection", "close"]]), app).status
      end
      slow_heads.first.write("done\r\n\r\n")
      assert_equal 200, slow_heads.first.read_response.status, "a slow head is served once complete"
      (slow_heads + slow_bodies).each(&:close)
    end
  end

  private

  def started(app, bytes)
    connection = connect(app)
    connection.write(bytes)
    connection
  end
end

# A body trickled in below --min-body-rate is ended with a 408, even though bytes
# keep arriving (so the idle read timeout alone would never fire).
class MinBodyRateTest < SpindleIntegrationTest
  %w[blocking threads fibers].each do |engine|
    define_method("test_a_body_below_the_minimum_rate_gets_408_with_#{engine}") do
      app = spawn_server("--engine", engine, "--read-timeout", "1", "--min-body-rate", "1000000",
                         "-b", LOOPBACK, app_path("echo"))
      client = connect(app)
      client.write("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000000\r\n\r\n")
      assert_equal 408, trickle_until_answered(client).status
    end
  end

  private

  # Sends 10 bytes every 0.2 s (far below a megabyte a second, never idle for a
  # second) until the server answers; at most 100 rounds.
  def trickle_until_answered(client)
    100.times do
      begin
        client.write("x" * 10)
      rescue Errno::EPIPE, Errno::ECONNRESET
        nil # the server answered and closed: read what it said
      end
      return client.read_response if client.socket.wait_readable(0.2)
    end
    flunk "no answer while trickling the body"
  end
end

# Clients that read their response slowly, or not at all for a while: in the
# blocking and threads engines the end of a response they have not taken waits
# in the connection's outbox and the selector writes it, so they hold no thread
# (the fiber engines only ever held the connection's fiber).
class SlowReadersTest < SpindleIntegrationTest
  READERS = 3
  MIB = 24 # far beyond what loopback socket buffers take at once (~10 MiB)

  { "blocking" => [], "threads" => ["-t", "1:1"] }.each do |engine, extra|
    define_method("test_readers_that_do_not_read_hold_no_thread_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "--write-timeout", "60", "-b", LOOPBACK, app_path("big"))
      readers = Array.new(READERS) { stalled_reader(app, "/array?mib=#{MIB}") }
      3.times do
        assert_equal "small\n", roundtrip(request("GET", "/small", [["Connection", "close"]]), app).body
      end
      readers.each { |reader| assert_intact reader.read_response(deadline: 60), MIB }
    end
  end

  %w[blocking threads fibers].each do |engine|
    define_method("test_a_streamed_response_to_a_slow_reader_arrives_whole_with_#{engine}") do
      app = spawn_server("--engine", engine, "-b", LOOPBACK, app_path("big"))
      reader = stalled_reader(app, "/stream?mib=#{MIB}")
      assert_intact reader.read_response(deadline: 60), MIB
      reader.write(request("GET", "/array?mib=1"))
      assert_intact reader.read_response, 1, "the connection carries the next request"
    end
  end

  private

  # A keep-alive client that asked for a large response and has read none of
  # it yet.
  def stalled_reader(app, path)
    reader = connect(app)
    reader.write(request("GET", path))
    reader
  end

  def assert_intact(response, mib, message = nil)
    assert_equal 200, response.status, message
    expected = Digest::SHA256.hexdigest(Array.new(mib * 16) { |i| (i % 251).chr * (64 * 1024) }.join)
    assert_equal expected, Digest::SHA256.hexdigest(response.body), message
  end
end
