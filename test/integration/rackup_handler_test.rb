# frozen_string_literal: true

require "rbconfig"
require_relative "../support/spindle_process"
require_relative "../support/command_process"

# `rackup -s spindle` finds Spindle's handler and serves through it, with
# every option the CLI has as -O Name=VALUE.
class RackupHandlerTest < Minitest::Test
  include FreePort
  ROOT = SpindleProcess::ROOT
  APP = File.join(ROOT, "examples", "hello", "config.ru")

  def teardown
    return unless @pid

    Process.kill(:KILL, -@pid)
    Process.wait(@pid)
  end

  def test_rackup_serves_an_app_with_spindle
    port = free_port
    out = rackup("-o", "127.0.0.1", "-p", port.to_s, "-O", "Engine=fibers", APP)
    line = wait_for_line(out, /\] INFO spindle .*engine=fibers/)
    assert_match(/binds=tcp:\/\/127\.0\.0\.1:#{port}/, line)
    assert_hello(port)
  end

  # Issue #11, item 22: only Engine, Threads and Quiet were read; Workers was
  # ignored without a word.
  def test_rackup_takes_cluster_and_limit_options
    port = free_port
    out = rackup("-o", "127.0.0.1", "-p", port.to_s, "-O", "Workers=2", "-O", "Engine=blocking",
                 "-O", "MaxBody=nil", "-O", "KeepaliveTimeout=3", APP)
    line = wait_for_line(out, /\] INFO spindle .*workers=2/)
    assert_match(/ engine=blocking /, line)
    assert_hello(port)
  end

  # -O Threads once counted hybrid's loops, as -t did: given without -O
  # Loops it is warned about, once (rackup's process re-execs itself for
  # jemalloc), before the start line.
  def test_rackup_threads_without_loops_under_hybrid_is_warned_about
    out = rackup("-o", "127.0.0.1", "-p", free_port.to_s, "-O", "Engine=hybrid", "-O", "Threads=5:5", APP)
    seen = read_until(out, /\] INFO spindle .*engine=hybrid loops=2/)
    assert_match(/^spindle: -O Threads sizes the threads engine's pool; hybrid runs 2 loops \(set them with -O Loops=N\)$/,
                 seen)
    assert_equal 1, seen.scan("Threads sizes").size, "said once"
  end

  def test_rackup_threads_with_loops_under_hybrid_is_not_warned_about
    out = rackup("-o", "127.0.0.1", "-p", free_port.to_s, "-O", "Engine=hybrid", "-O", "Threads=5:5",
                 "-O", "Loops=3", APP)
    refute_match(/Threads sizes/, read_until(out, /\] INFO spindle .*engine=hybrid loops=3/))
  end

  # USR2 re-ran `bin/spindle` with no arguments (and crashed the master) when
  # the cluster came from rackup; it now re-runs rackup's own command line.
  def test_rackup_cluster_hot_restart
    port = free_port
    out = rackup("-o", "127.0.0.1", "-p", port.to_s, "-O", "Workers=1", APP)
    old = wait_for_line(out, /\] INFO spindle .*workers=1/)[/ pid=(\d+)/, 1].to_i
    Process.kill(:USR2, old)
    new = wait_for_line(out, /\] INFO spindle .*workers=1.* pid=(?!#{old} )\d+/)[/ pid=(\d+)/, 1].to_i
    refute_equal old, new
    wait_for_line(out, /told the previous master \(pid #{old}\) to drain/)
    assert_hello(port)
  end

  # Alone, past --worker-memory-limit a process restarts itself as USR2
  # does. Through rackup it used to have no command line to rerun and only
  # warned (issue 67 changed that: it reruns the one the kernel recorded,
  # RackupRestart; the warning is left to a system without /proc). Every
  # process is over 1 MiB, so the new process restarts in its turn.
  def test_rackup_memory_limit_alone_restarts_in_place
    port = free_port
    out = rackup("-o", "127.0.0.1", "-p", port.to_s, "-O", "WorkerMemoryLimit=1", APP)
    seen = read_until(out, /serving; told the previous process \(pid #{@pid}\) to drain/)
    assert_match(/INFO spindle: memory \d+ MiB \(USS\) is over --worker-memory-limit 1 MiB: restarting in place/, seen)
    assert_hello(port)
  end

  def test_rackup_bind_option_replaces_host_and_port
    dir = Dir.mktmpdir("sph")
    out = rackup("-O", "Bind=unix://#{dir}/r.sock", APP)
    line = wait_for_line(out, /\] INFO spindle .*binds=/)
    assert_match(%r{ binds=unix://#{Regexp.escape(dir)}/r\.sock }, line)
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  # Issue 65, item 15: what stops a start was rackup's backtrace and exit
  # status 1; it is one line and status 2, as from bin/spindle.
  def test_an_unknown_option_is_one_line_and_exit_status_2
    assert_fails_in_one_line(/\Aspindle: unknown option -O Wokers \(rackup -s spindle -h lists them\)\z/,
                             "-O", "Wokers=2")
  end

  def test_a_bad_value_is_one_line_and_exit_status_2
    assert_fails_in_one_line(/\Aspindle: threads minimum must be a non-negative integer, got "abc"\z/,
                             "-O", "Threads=abc")
  end

  # -O engine=fibers was ignored without a word: rackup passes its own
  # settings in lower case in the same hash (config, quiet...), so ours in
  # lower case are refused with their spelling rather than guessed at.
  def test_a_lower_case_name_is_refused_with_its_camel_case_spelling
    assert_fails_in_one_line(/\Aspindle: unknown option -O engine \(did you mean -O Engine\? /, "-O", "engine=fibers")
  end

  def test_a_port_in_use_is_one_line_and_exit_status_2
    taken = TCPServer.new("127.0.0.1", 0)
    in_use = %r{\Aspindle: cannot bind tcp://127\.0\.0\.1:#{taken.addr[1]}: address already in use\z}
    assert_fails_in_one_line(in_use, "-p", taken.addr[1].to_s)
    assert_fails_in_one_line(in_use, "-p", taken.addr[1].to_s, "-O", "Workers=2")
  ensure
    taken&.close
  end

  private

  def rackup(*args)
    out_r, out_w = IO.pipe
    @pid = Process.spawn(rackup_env, RbConfig.ruby, Gem.bin_path("rackup", "rackup"), "-s", "spindle", *args,
                         out: out_w, err: out_w, pgroup: true)
    out_w.close
    out_r
  end

  # rackup's whole output is the one line, and its exit status 2.
  def assert_fails_in_one_line(line, *args)
    process = CommandProcess.run([RbConfig.ruby, Gem.bin_path("rackup", "rackup")], "-s", "spindle", "-o", "127.0.0.1",
                                 *(args.include?("-p") ? [] : ["-p", free_port.to_s]), *args, APP, env: rackup_env)
    assert_equal 2, process.status&.exitstatus, process.output
    lines = process.output.lines.map(&:chomp).grep(/\S/)
    assert_equal 1, lines.size, process.output
    assert_match line, lines.first
  end

  def rackup_env = { "RUBYOPT" => "#{ENV['RUBYOPT']} -I#{File.join(ROOT, 'lib')}" } # keeps bin/test's Bundler setup

  def assert_hello(port)
    connection = HttpClient.connect("127.0.0.1", port)
    connection.write(HttpClient.request("GET", "/", [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status
    assert_equal "Hello World\n", response.body
  ensure
    connection&.close
  end


  def wait_for_line(io, pattern, deadline: 30)
    read_until(io, pattern, deadline: deadline).each_line.find { |l| l.match?(pattern) }
  end

  # Everything io gave until a whole line matched pattern (stdout and
  # stderr share the pipe, so what was printed before that line is in it).
  def read_until(io, pattern, deadline: 30)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    seen = +""
    loop do
      return seen if seen.each_line.any? { |l| l.match?(pattern) && l.end_with?("\n") }

      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "rackup never printed #{pattern.inspect}:\n#{seen}" if remaining <= 0 || !io.wait_readable(remaining)
      seen << (io.read_nonblock(4096, exception: false).then { |d| d.is_a?(String) ? d : "" })
    end
  end
end
