# frozen_string_literal: true

require "test_helper"
require "spindle/cli"
require "spindle/rack_handler"
require "tmpdir"

# The option table drives the CLI, the config file, the rackup handler and
# CONFIG.md; these check that each of them takes what the table offers.
class ConfigOptionsTest < Minitest::Test
  Config = Spindle::Config

  # Issue #11, item 21: `--max-body nil` was documented and refused.
  def test_every_option_whose_help_offers_nil_takes_nil_on_the_command_line
    offering = Config::OPTIONS.select { |o| o.cli && o.description.include?("nil:") }
    refute_empty offering
    offering.each do |option|
      values = Spindle::CLI.new.parse([option.flag.last, "nil"])
      assert_nil values.fetch(option.name), "#{option.flag.last} nil"
      assert_nil Config.build(values).public_send(option.name)
    end
  end

  def test_nil_is_refused_where_the_help_does_not_offer_it
    assert_raises(Config::Error) { Spindle::CLI.new.parse(["--backlog", "nil"]) }
  end

  # One check of engine names (Engine.check): the option and Engine.fetch
  # refuse with the same words.
  def test_an_unknown_engine_is_refused_by_the_option_as_by_the_registry
    error = assert_raises(Config::Error) { Spindle::CLI.new.parse(["--engine", "warp"]) }
    assert_equal 'unknown engine "warp" (choose from blocking, threads, fibers, hybrid)', error.message
    registry = assert_raises(Spindle::Engine::UnknownEngine) { Spindle::Engine.fetch("warp") }
    assert_equal error.message, registry.message
    assert_equal "fibers", Spindle::CLI.new.parse(["--engine", "fibers"])[:engine]
  end

  # A bare --cpu-affinity is what it meant before it took a mode; a mode
  # only ever follows an "=", so the config.ru after a bare flag stays the app.
  def test_cpu_affinity_modes
    parse = ->(*args) { Spindle::CLI.new.parse(args) }
    assert_equal "process", parse.call("--cpu-affinity", "config.ru")[:cpu_affinity]
    assert_equal "app", parse.call("--cpu-affinity=app")[:cpu_affinity]
    assert_equal "process", parse.call("--cpu-affinity=process")[:cpu_affinity]
    assert_equal "auto", parse.call("--cpu-affinity=auto")[:cpu_affinity]
    assert_equal false, parse.call("--no-cpu-affinity")[:cpu_affinity]
    error = assert_raises(Config::Error) { parse.call("--cpu-affinity=pool") }
    assert_equal 'cpu_affinity must be auto, process, app or off, got "pool"', error.message
    assert_equal "process", Spindle::RackHandler.build_config(CpuAffinity: true).cpu_affinity
    assert_equal "app", Spindle::RackHandler.build_config(CpuAffinity: "app").cpu_affinity
    assert_equal "auto", Config.build({}).cpu_affinity
    assert_equal false, Spindle::RackHandler.build_config(CpuAffinity: "off").cpu_affinity
  end

  # --threads sizes the threads engine's pool (1:5 unless set); hybrid's
  # loops are --loops (2 unless set). An app's config file that sizes the
  # pool as Puma's config/puma.rb does (threads 1, 5) leaves hybrid on its
  # two loops: read as a loop count, it ran five, and each loop past the
  # first costs CPU on every request.
  def test_threads_size_the_pool_and_loops_count_hybrid_loops
    build = ->(*args) { Config.build(Spindle::CLI.new.parse(args)) }
    assert_equal [1, 5], build.call.threads
    assert_equal [3, 3], build.call("--engine", "threads", "-t", "3:3").threads
    assert_equal 2, build.call("--engine", "hybrid").loops
    assert_equal 2, build.call("--engine", "hybrid", "-t", "5:5").loops
    assert_equal 3, build.call("--engine", "hybrid", "--loops", "3").loops
    assert_equal 2, Spindle::RackHandler.build_config(Engine: "hybrid").loops
    assert_equal 4, Spindle::RackHandler.build_config(Engine: "hybrid", Loops: "4").loops
    Dir.mktmpdir do |dir|
      File.write(file = File.join(dir, "spindle.rb"), "engine :hybrid\nthreads 1, 5\n")
      assert_equal [2, [1, 5]], build.call("-C", file).then { |c| [c.loops, c.threads] }
      File.write(file, "engine :hybrid\nloops 3\n")
      assert_equal 3, build.call("-C", file).loops
    end
  end

  def test_loops_must_be_a_positive_integer
    error = assert_raises(Spindle::Config::Error) { Config.build(Spindle::CLI.new.parse(%w[--loops 0])) }
    assert_equal "loops must be a positive integer, got \"0\"", error.message
  end

  # Item 19: ports are 16 bits; 0 asks the kernel for a free one.
  def test_port_range
    assert_equal 0, Spindle::CLI.new.parse(["-p", "0"])[:port]
    assert_equal 65_535, Spindle::CLI.new.parse(["-p", "65535"])[:port]
    %w[65536 70000 -1 http].each do |port|
      assert_raises(Config::Error, port) { Spindle::CLI.new.parse(["-p", port]) }
    end
  end

  # Item 20: both at once was -p silently dropped.
  def test_port_and_bind_together_are_an_error
    error = assert_raises(Config::Error) { Config.build({ port: 8080, binds: ["tcp://127.0.0.1:0"] }) }
    assert_match(/port 8080 and bind/, error.message)
  end

  # Item 22: the handler offered Engine, Threads and Quiet only.
  def test_rackup_handler_offers_every_option_but_those_rackup_sets_itself
    offered = Spindle::RackHandler.valid_options.keys.map { |k| k.split("=").first }
    expected = Config::OPTIONS.size - Config::RackupOptions::LEFT_TO_RACKUP.size
    assert_equal expected, offered.size, offered.inspect
    %w[Bind Engine Threads Quiet Workers Preload MaxBody MaxHead Config Control ReforkAfter].each do |name|
      assert_includes offered, name
    end
  end

  def test_rackup_handler_options_reach_the_config
    config = Spindle::RackHandler.build_config(
      Host: "127.0.0.1", Port: "9", Workers: "2", Preload: "false", MaxBody: "nil", Threads: "2:4",
      ReforkAfter: "100,200", config: "config.ru", environment: "development"
    )
    assert_equal 2, config.workers
    assert_equal false, config.preload
    assert_nil config.max_body
    assert_equal [2, 4], config.threads
    assert_equal [100, 200], config.refork_after
    assert_equal ["tcp://127.0.0.1:9"], config.binds
  end

  def test_rackup_bind_replaces_host_and_port
    config = Spindle::RackHandler.build_config(Host: "127.0.0.1", Port: 9292, Bind: "unix:///tmp/a.sock,tcp://[::1]:0")
    assert_equal ["unix:///tmp/a.sock", "tcp://[::1]:0"], config.binds
  end

  # -O Config=FILE: the file's options and hooks, its bind over rackup's host and port.
  def test_rackup_config_file
    Dir.mktmpdir do |dir|
      path = File.join(dir, "spindle.rb")
      File.write(path, "workers 3\nbind \"unix://#{dir}/a.sock\"\nbefore_fork { File.write(\"#{dir}/ran\", \"\") }\n")
      config = Spindle::RackHandler.build_config(Host: "127.0.0.1", Port: 9292, Config: path)
      assert_equal 3, config.workers
      assert_equal ["unix://#{dir}/a.sock"], config.binds
      config.run_hooks(:before_fork)
      assert File.exist?(File.join(dir, "ran")), "the file's before_fork hook should run"
    end
  end

  # Issue 67: sidecars from the command line (repeatable) and the config
  # file (sidecar CMD, name:), the file's and the line's not mixed.
  def test_sidecars_from_the_command_line_and_the_config_file
    values = Spindle::CLI.new.parse(["--sidecar", "bin/jobs", "--sidecar", "ruby worker.rb --queue a"])
    assert_equal [{ name: "jobs", command: "bin/jobs" }, { name: "ruby", command: "ruby worker.rb --queue a" }],
                 Config.build(values).sidecars
    Dir.mktmpdir do |dir|
      path = File.join(dir, "spindle.rb")
      File.write(path, "sidecar \"bin/jobs\", name: \"solid_queue\"\nsidecar \"bin/mailer\"\n" \
                       "restart_file \"tmp/restart.txt\"\n")
      config = Config.build({ config_file: path })
      assert_equal [{ name: "solid_queue", command: "bin/jobs" }, { name: "mailer", command: "bin/mailer" }],
                   config.sidecars
      assert_equal "tmp/restart.txt", config.restart_file
      assert_equal [{ name: "x", command: "bin/x" }],
                   Config.build(Spindle::CLI.new.parse(["-C", path, "--sidecar", "bin/x"])).sidecars
    end
    assert_empty Config.build({}).sidecars
    assert_nil Config.build({}).restart_file
    error = assert_raises(Config::Error) { Spindle::CLI.new.parse(["--sidecar", " "]) }
    assert_match(/sidecar needs a command/, error.message)
  end

  def test_rackup_refuses_unknown_camel_case_names_and_leaves_its_own_alone
    error = assert_raises(Config::Error) { Spindle::RackHandler.build_config(Wokers: "2") }
    assert_match(/-O Wokers/, error.message)
    Spindle::RackHandler.build_config(Host: "::1", Port: 9, AccessLog: [], quiet: true, config: "x.ru")
  end

  # Issue 65, item 15: -O engine=fibers was ignored without a word.
  def test_rackup_refuses_our_names_in_another_case_with_their_spelling
    error = assert_raises(Config::Error) { Spindle::RackHandler.build_config(engine: "fibers", max_body: "1") }
    assert_equal "unknown option -O engine (did you mean -O Engine? the names are CamelCase), " \
                 "-O max_body (did you mean -O MaxBody? the names are CamelCase) (rackup -s spindle -h lists them)",
                 error.message
    assert_match(/-O MAXBODY \(did you mean -O MaxBody\?/,
                 assert_raises(Config::Error) { Spindle::RackHandler.build_config(MAXBODY: "1") }.message)
  end

  # What rackup 2.3 and rails server 7.2 pass in lower case, some of it under
  # names that fold to ours (config, quiet, early_hints): theirs, not refused.
  def test_rackup_and_rails_server_settings_in_lower_case_are_theirs
    theirs = { environment: "development", pid: nil, config: "config.ru", debug: false, warn: false, quiet: true,
               include: [], require: [], builder: nil, server: "spindle", daemonize: false, heapfile: nil,
               profile_file: nil, profile_mode: nil, user_supplied_options: [], log_stdout: true, caching: nil,
               restart_cmd: "bin/rails server", early_hints: true, DoNotReverseLookup: true }
    config = Spindle::RackHandler.build_config(Host: "127.0.0.1", Port: 3000, AccessLog: [], **theirs)
    assert_equal false, config.early_hints, "rails server's --early-hints is not ours"
  end
end
