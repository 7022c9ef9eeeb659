# frozen_string_literal: true

require "rbconfig"
require_relative "../support/spindle_process"

# `rackup -s spindle` finds Spindle's handler and serves through it.
class RackupHandlerTest < Minitest::Test
  ROOT = SpindleProcess::ROOT
  APP = File.join(ROOT, "examples", "hello", "config.ru")

  def test_rackup_serves_an_app_with_spindle
    port = free_port
    rackup = Gem.bin_path("rackup", "rackup")
    out_r, out_w = IO.pipe
    env = { "RUBYOPT" => "#{ENV['RUBYOPT']} -I#{File.join(ROOT, 'lib')}" } # keeps bin/test's Bundler setup
    pid = Process.spawn(env, RbConfig.ruby, rackup, "-s", "spindle",
                        "-o", "127.0.0.1", "-p", port.to_s, "-O", "Engine=fibers", APP,
                        out: out_w, err: out_w, pgroup: true)
    out_w.close
    line = wait_for_line(out_r, /^spindle .*engine=fibers/)
    assert_match(/binds=tcp:\/\/127\.0\.0\.1:#{port}/, line)
    response = HttpClient.connect("127.0.0.1", port).tap { |c| c.write(HttpClient.request("GET", "/")) }.read_response
    assert_equal 200, response.status
    assert_equal "Hello World\n", response.body
  ensure
    Process.kill(:KILL, -pid) if pid
    Process.wait(pid) if pid
  end

  private

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def wait_for_line(io, pattern, deadline: 30)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    seen = +""
    loop do
      seen.each_line { |l| return l if l.match?(pattern) && l.end_with?("\n") }
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "rackup never printed #{pattern.inspect}:\n#{seen}" if remaining <= 0 || !io.wait_readable(remaining)
      seen << (io.read_nonblock(4096, exception: false).then { |d| d.is_a?(String) ? d : "" })
    end
  end
end
