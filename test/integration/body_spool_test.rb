# frozen_string_literal: true

require "socket"
require "tmpdir"
require_relative "../support/spindle_process"

# Request bodies past body_spool_threshold go to an unlinked tempfile. Once
# the request is over (or the client went away mid-body), that file is closed,
# whatever the app did with rack.input: the server's descriptors and spool
# files come back to where they were, without waiting for a GC.
class BodySpoolTest < SpindleIntegrationTest
  BODY = ("b" * (256 * 1024)).freeze # past the default threshold (64 KiB)
  PATHS = %w[/read /ignore /replace /keep /close].freeze
  ROUNDS = 3

  { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.each do |engine, extra|
    define_method("test_spooled_bodies_are_closed_when_their_request_ends_with_#{engine}") do
      Dir.mktmpdir("spool") do |tmp|
        app = spawn_server("--engine", engine, *extra, "-b", LOOPBACK,
                           app_path("spools"), env: { "TMPDIR" => tmp })
        3.times { assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), app).status }
        # A first round before the baseline: what serving opens once and
        # keeps (a loop's first connection under hybrid) is not a leak.
        upload_each_way(app)
        wait_until("the first round's spool files closed", deadline: 30, interval: 0.1) { spools(app, tmp).empty? }
        baseline = wait_for_stable_count(app)
        ROUNDS.times { upload_each_way(app) }
        assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), app).status
        assert_spools_released(app, tmp, baseline)
        # Stopped before its TMPDIR goes: a connection abandoned mid-body
        # may still be read (and spooled, then unlinked) on a busy machine,
        # and a file the server unlinked as the directory was removed
        # failed the removal (ENOENT, once in CI).
        assert app.stop, app.output
      end
    end
  end

  private

  # One upload per PATHS entry on a keep-alive connection, one on its own
  # connection, and two abandoned mid-body: one closed, one reset.
  def upload_each_way(app)
    connection = connect(app)
    PATHS.each do |path|
      connection.write(request("POST", path, body: BODY))
      assert_equal 200, connection.read_response.status
    end
    connection.close
    assert_equal 200, roundtrip(request("POST", "/ignore", [["Connection", "close"]], body: BODY), app).status
    abandon_mid_body(app, reset: false)
    abandon_mid_body(app, reset: true)
  end

  def abandon_mid_body(app, reset:)
    socket = Socket.tcp(app.host, app.port)
    socket.write("POST /read HTTP/1.1\r\nHost: a\r\nContent-Length: #{BODY.bytesize * 4}\r\n\r\n#{BODY}")
    socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack("ii")) if reset
  ensure
    socket&.close
  end

  # At most the baseline: a leak adds descriptors; something transient at the
  # baseline (a closing socket) may be gone by now. The deadline is over
  # LingeringClose's 10 s: a close that lingers still holds its socket.
  def assert_spools_released(app, tmp, baseline)
    last = nil
    wait_until("no spool file open and descriptors back to #{baseline}", deadline: 30, interval: 0.1) do
      last = [descriptors(app).size, spools(app, tmp).size]
      last[0] <= baseline && last[1].zero?
    end
  rescue Minitest::Assertion
    raise Minitest::Assertion, "#{$!.message}; last seen [descriptors, spool files] #{last.inspect}; " \
                               "open: #{targets(app).tally.inspect}"
  end

  def descriptors(app) = Dir["/proc/#{app.pid}/fd/*"]

  # What the descriptors are, socket and pipe numbers left out: which kind grew.
  def targets(app)
    descriptors(app).map { |fd| File.readlink(fd).sub(/:\[\d+\]\z/, "") rescue "gone" } # rubocop:disable Style/RescueModifier
  end

  # The descriptors open on a spool file (unlinked: "... (deleted)").
  def spools(app, tmp)
    descriptors(app).select do |fd|
      File.readlink(fd).start_with?(File.join(tmp, "spindle-body"))
    rescue Errno::ENOENT
      false
    end
  end

  def wait_for_stable_count(app)
    previous = descriptors(app).size
    wait_until("descriptor count stable", deadline: 15, interval: 0.1) do
      current = descriptors(app).size
      stable = current == previous
      previous = current
      stable
    end
    previous
  end
end
