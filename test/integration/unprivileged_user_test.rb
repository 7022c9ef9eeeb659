# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/unprivileged"

# bin/spindle run by a user who may read the checkout but not write it (an app
# user on a clone root made). Issue #11, "Startup and logs".
class UnprivilegedUserTest < SpindleIntegrationTest
  def setup
    skip "needs root and runuser, to run as #{Unprivileged::USER}" unless Unprivileged.available?
    @checkout = Unprivileged.copy_checkout
  end

  def teardown
    FileUtils.rm_rf(@checkout) if @checkout
  end

  # It failed with Errno::EACCES on tmp/ext/.../.lock although nothing needed
  # building.
  def test_serves_from_a_checkout_it_cannot_write_when_everything_is_built
    app = File.join(@checkout, "examples", "hello", "config.ru")
    Unprivileged.serve(@checkout, "-b", LOOPBACK, app) do |line|
      assert_match SpindleProcess::START_LINE, line
      bind = SpindleProcess.parse_bind(line[SpindleProcess::START_LINE, 1])
      response = roundtrip(request("GET", "/", [["Connection", "close"]]), fake_process(bind))
      assert_equal 200, response.status
    end
  end

  def test_missing_extension_it_cannot_build_is_one_line_and_exit_2
    File.unlink(*Dir[File.join(@checkout, "tmp", "ext", "*", "spindle_http.*")])
    out, err, status = Unprivileged.run(@checkout, "-v")
    assert status&.exited?, "bin/spindle did not exit by itself:\n#{out}#{err}"
    assert_equal 2, status.exitstatus, err
    assert_equal 1, err.lines.size, "one line on stderr:\n#{err}"
    assert_match %r{\Aspindle: the C extension is missing .*nobody cannot write #{Regexp.escape(@checkout)}/tmp/ext/}, err
  end

  # EACCES from bind(2) was a raw backtrace.
  def test_privileged_port_is_one_line_and_exit_2
    port = (1..1023).find { |p| port_free?(p) } or skip "no free port below 1024"
    app = File.join(@checkout, "examples", "hello", "config.ru")
    out, err, status = Unprivileged.run(@checkout, "-b", "tcp://127.0.0.1:#{port}", app)
    assert status&.exited?, "bin/spindle did not exit by itself:\n#{out}#{err}"
    assert_equal 2, status.exitstatus, err
    assert_equal 1, err.lines.size, "one line on stderr:\n#{err}"
    assert_match(/\Aspindle: cannot bind tcp:\/\/127\.0\.0\.1:#{port}: permission denied: port #{port} is privileged/, err)
  end

  private

  # roundtrip talks to a SpindleProcess; this one only needs binds.
  def fake_process(bind)
    Struct.new(:binds) { def connect(bind) = HttpClient.connect(bind.host, bind.port) }.new([bind])
  end

  def port_free?(port)
    TCPServer.new("127.0.0.1", port).close
    true
  rescue SystemCallError
    false
  end
end
