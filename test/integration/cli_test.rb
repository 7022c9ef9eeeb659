# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../../lib/spindle/version"
require_relative "../../lib/spindle/boot/memory_setup"

# bin/spindle as an operator meets it: version, help, the start-up line, the
# default app, and one clear line plus a non-zero exit for every mistake
# (1 when the app cannot be loaded, 2 for every other failure to start).
class CliTest < SpindleIntegrationTest
  OPTIONS = %w[--bind --port --environment --engine --threads --config --log-requests --quiet --version --help].freeze

  def setup
    @dir = Dir.mktmpdir("spc")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_version
    %w[-v --version].each do |flag|
      process = run_spindle(flag)
      assert_equal 0, process.status.exitstatus, "#{flag}:\n#{process.output}"
      assert_includes process.stdout, Spindle::VERSION, "#{flag} prints the version"
      assert_equal 1, process.stdout.lines.size, "#{flag} prints one line:\n#{process.stdout}"
    end
  end

  def test_help_lists_every_option
    %w[-h --help].each do |flag|
      process = run_spindle(flag)
      assert_equal 0, process.status.exitstatus, "#{flag}:\n#{process.output}"
      OPTIONS.each { |option| assert_includes process.stdout, option, "#{flag} should document #{option}" }
    end
  end

  def test_unknown_flag_is_one_line_on_stderr_and_exit_2
    process = run_spindle("--no-such-flag")
    assert_one_error_line(process, 2, /no-such-flag/)
  end

  def test_flag_missing_its_argument_exits_2
    process = run_spindle("-b")
    assert_one_error_line(process, 2, /bind|-b/)
  end

  def test_unknown_engine_is_refused
    process = run_spindle("--engine", "warp-drive", "-b", LOOPBACK, app_path("echo"))
    assert_one_error_line(process, nil, /warp-drive|engine/)
  end

  def test_malformed_threads_is_refused
    process = run_spindle("-t", "lots", "-b", LOOPBACK, app_path("echo"))
    assert_one_error_line(process, nil, /threads|lots|-t/)
  end

  def test_missing_config_ru
    missing = File.join(@dir, "nope.ru")
    process = run_spindle("-b", LOOPBACK, missing)
    assert_one_error_line(process, 1, /nope\.ru/)
  end

  def test_broken_config_ru
    broken = File.join(@dir, "broken.ru")
    File.write(broken, "run lambda { |env| [200, {}, [\"unclosed\"]\n")
    process = run_spindle("-b", LOOPBACK, broken)
    assert_one_error_line(process, 1, /broken\.ru/)
  end

  def test_config_ru_that_raises_while_loading
    raising = File.join(@dir, "raising.ru")
    File.write(raising, "raise 'config-load-failure-marker'\nrun ->(env) { [200, {}, []] }\n")
    process = run_spindle("-b", LOOPBACK, raising)
    assert_one_error_line(process, 1, /config-load-failure-marker|raising\.ru/)
  end

  def test_port_in_use
    holder = TCPServer.new("127.0.0.1", 0)
    port = holder.addr[1]
    process = run_spindle("-b", "tcp://127.0.0.1:#{port}", app_path("echo"))
    assert_one_error_line(process, 2, /#{port}.*in use/i)
  ensure
    holder&.close
  end

  # Issue #11, item 19: the kernel takes 16 bits of a port, so 70000 bound 4464.
  def test_port_outside_the_range_is_refused
    %w[70000 65536 -1].each do |port|
      process = run_spindle("-p", port, app_path("echo"))
      assert_one_error_line(process, 2, /port.*#{port}|#{port}.*port/)
    end
  end

  def test_bind_port_outside_the_range_is_refused
    process = run_spindle("-b", "tcp://127.0.0.1:99999", app_path("echo"))
    assert_one_error_line(process, 2, %r{tcp://127\.0\.0\.1:99999.*0-65535})
  end

  # Item 20: -p was dropped without a word when -b was given too.
  def test_port_and_bind_together_are_refused
    process = run_spindle("-p", "9", "-b", LOOPBACK, app_path("echo"))
    assert_one_error_line(process, 2, /port 9 and bind/)
  end

  def test_port_and_bind_in_one_config_file_are_refused
    config = File.join(@dir, "both.rb")
    File.write(config, "port 9\nbind \"tcp://127.0.0.1:0\"\n")
    process = run_spindle("-C", config, app_path("echo"))
    assert_one_error_line(process, 2, /port 9 and bind/)
  end

  # Flags win over the file, and -p and -b both say where to listen: -p on the
  # command line replaces the file's binds (it used to be ignored).
  def test_port_flag_replaces_the_config_files_bind
    config = File.join(@dir, "bound.rb")
    File.write(config, "bind \"unix://#{@dir}/from-file.sock\"\n")
    port = free_port
    process = spawn_server("-C", config, "-p", port.to_s, app_path("echo"))
    assert_equal ["tcp://0.0.0.0:#{port}"], process.binds.map(&:uri), process.start_line
  end

  # Item 21: the help offered nil and the flag refused it. With no limit, a
  # body far above the default 100 MiB is let in (100 Continue, not 413).
  def test_max_body_nil_means_no_limit
    process = spawn_server("--max-body", "nil", "--min-body-rate", "nil", "-b", LOOPBACK, app_path("echo"))
    connection = connect(process)
    connection.write(request("POST", "/big", [["Expect", "100-continue"], ["Content-Length", (200 * 1024 * 1024).to_s]]))
    assert_equal 100, connection.read_response(interim: false).status
  end

  # Item 23: hooks were in neither -h nor CONFIG.md, and -C pointed at a "DSL
  # below" that did not exist.
  def test_help_names_every_hook_and_where_the_dsl_is_documented
    process = run_spindle("-h")
    %w[before_fork after_worker_fork before_refork after_refork].each do |hook|
      assert_includes process.stdout, hook, "-h should name the #{hook} hook"
    end
    assert_includes process.stdout, "docs/CONFIG.md"
    assert_match(/^Exit status: /, process.stdout)
  end

  # Startup errors were raw backtraces; each is one line and exit 2, in one
  # process and while a cluster master boots (Master#boot opens the listeners).
  def test_unix_bind_in_a_missing_directory
    [[], ["-w", "1"]].each do |mode|
      process = run_spindle(*mode, "-b", "unix://#{@dir}/missing/app.sock", app_path("echo"))
      assert_one_error_line(process, 2, %r{unix://#{Regexp.escape(@dir)}/missing/app\.sock.*directory .* does not exist})
    end
  end

  def test_cluster_port_in_use
    holder = TCPServer.new("127.0.0.1", 0)
    process = run_spindle("-w", "1", "-b", "tcp://127.0.0.1:#{holder.addr[1]}", app_path("echo"))
    assert_one_error_line(process, 2, /#{holder.addr[1]}.*in use/)
  ensure
    holder&.close
  end

  def test_start_line_names_engine_threads_binds_pid_ruby_yjit_and_allocator
    process = spawn_server("-b", LOOPBACK, "--engine", "threads", "-t", "2:7", app_path("echo"))
    line = process.start_line
    assert_match(/\Aspindle #{Regexp.escape(Spindle::VERSION)} /, line)
    assert_match(/ engine=threads( |\z)/, line)
    assert_match(/ threads=2:7( |\z)/, line)
    assert_match(/ pid=#{process.pid}( |\z)/, line)
    assert_match(/ ruby=#{Regexp.escape(RUBY_VERSION)}( |\z)/, line)
    assert_match(/ yjit=(on|off)( |\z)/, line)
    allocator = Spindle::MemorySetup.installed_jemalloc ? "jemalloc" : "glibc" # --allocator auto
    assert_match(/ allocator=#{allocator}( |\z)/, line)
    assert_equal 1, process.stdout.lines.grep(/binds=/).size, "one start-up line"
  end

  # hybrid is sized by --loops alone: a --threads (the pool's size) changes nothing.
  def test_start_line_names_hybrids_loops
    process = spawn_server("-b", LOOPBACK, "--engine", "hybrid", "-t", "5:5", "--loops", "3", app_path("echo"))
    assert_match(/ engine=hybrid loops=3( |\z)/, process.start_line)
    refute_match(/ threads=/, process.start_line)
    process.stop # stderr has a pipe of its own: read all of it before saying what it lacks
    refute_match(/--threads sizes/, process.stderr, "--loops given: nothing to warn about")
  end

  # -t once counted hybrid's loops: given without --loops, the command line
  # is told that it no longer does, before the server starts.
  def test_threads_without_loops_under_hybrid_is_warned_about
    process = spawn_server("-b", LOOPBACK, "--engine", "hybrid", "-t", "5:5", app_path("echo"))
    assert_match(/ engine=hybrid loops=2( |\z)/, process.start_line)
    wait_until("the warning on stderr", deadline: 10) { process.stderr.include?("--threads sizes") }
    assert_match(/\Aspindle: --threads sizes the threads engine's pool; hybrid runs 2 loops \(set them with --loops N\)$/,
                 process.stderr)
    assert_equal 1, process.stderr.scan("--threads sizes").size, "said once, not again by the re-exec for jemalloc"
  end

  def test_engine_blocking_is_named_in_the_start_line
    process = spawn_server("-b", LOOPBACK, "--engine", "blocking", app_path("echo"))
    assert_match(/ engine=blocking( |\z)/, process.start_line)
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
  end

  def test_environment_option_sets_rack_env
    process = spawn_server("-e", "production", "-b", LOOPBACK, app_path("echo"))
    response = roundtrip(request("GET", "/", [["Connection", "close"]]), process)
    assert_equal "production", JSON.parse(response.body)["rack_env"]
  end

  def test_quiet_still_prints_the_start_line
    process = spawn_server("-q", "-b", LOOPBACK, app_path("echo"))
    assert_match SpindleProcess::START_LINE, process.stdout
  end

  def test_log_requests_logs_each_request
    process = spawn_server("--log-requests", "-b", LOOPBACK, app_path("echo"))
    roundtrip(request("GET", "/logged-path-3d9a", [["Connection", "close"]]), process)
    assert process.wait_for_output(%r{GET /logged-path-3d9a}), "no request log line:\n#{process.output}"
  end

  def test_config_file
    config = File.join(@dir, "spindle.rb")
    File.write(config, <<~RUBY)
      bind "tcp://127.0.0.1:0"
      engine :blocking
    RUBY
    process = spawn_server("-C", config, app_path("echo"))
    assert_match(/ engine=blocking( |\z)/, process.start_line)
    assert_match(%r{ binds=tcp://127\.0\.0\.1:\d+( |\z)}, process.start_line)
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
  end

  def test_command_line_flags_win_over_the_config_file
    config = File.join(@dir, "spindle.rb")
    File.write(config, "bind \"tcp://127.0.0.1:0\"\nengine :blocking\n")
    process = spawn_server("-C", config, "--engine", "threads", app_path("echo"))
    assert_match(/ engine=threads( |\z)/, process.start_line)
  end

  def test_broken_config_file
    config = File.join(@dir, "broken_spindle.rb")
    File.write(config, "bind \"tcp://127.0.0.1:0\"\nno_such_directive 3\n")
    process = run_spindle("-C", config, app_path("echo"))
    assert_one_error_line(process, nil, /broken_spindle\.rb|no_such_directive/)
  end

  def test_no_argument_serves_config_ru_from_the_working_directory
    File.write(File.join(@dir, "config.ru"), <<~RU)
      body = "served from ./config.ru\\n"
      run ->(env) { [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]] }
    RU
    process = spawn_server("-b", LOOPBACK, chdir: @dir)
    response = roundtrip(request("GET", "/", [["Connection", "close"]]), process)
    assert_equal 200, response.status
    assert_equal "served from ./config.ru\n", response.body
  end

  def test_no_argument_and_no_config_ru_serves_the_demo_app
    process = spawn_server("-b", LOOPBACK, chdir: @dir)
    response = roundtrip(request("GET", "/", [["Connection", "close"]]), process)
    assert_equal 200, response.status, "the bundled demo app should answer:\n#{response}"
    refute_empty response.body
  end

  def test_examples_hello_answers
    process = spawn_server("-b", LOOPBACK, File.join(SpindleProcess::ROOT, "examples", "hello", "config.ru"))
    response = roundtrip(request("GET", "/", [["Connection", "close"]]), process)
    assert_equal 200, response.status
    refute_empty response.body
  end

  private


  def assert_one_error_line(process, exitstatus, mentions)
    status = process.status
    assert status&.exited?, "bin/spindle did not exit by itself (#{status.inspect}):\n#{process.output}"
    if exitstatus
      assert_equal exitstatus, status.exitstatus, "exit status; stderr:\n#{process.stderr}"
    else
      refute_equal 0, status.exitstatus, "should fail; output:\n#{process.output}"
    end
    lines = process.stderr.lines
    assert_equal 1, lines.size, "one line on stderr, got:\n#{process.stderr}"
    assert_match(/\Aspindle: /, lines.first)
    assert_match mentions, lines.first, "the message should say what is wrong"
    refute_match SpindleProcess::START_LINE, process.stdout, "no start-up line for a failed start"
  end
end
