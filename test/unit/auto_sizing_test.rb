# frozen_string_literal: true

require "test_helper"
require "spindle/cli"
require "spindle/config/rackup_options"
require "tmpdir"

# --workers/--threads/--worker-memory-limit auto, and PORT and
# WEB_CONCURRENCY: the numbers they settle to, the lines that say why, and
# which layer wins (flag > config file > environment > default).
class AutoSizingTest < Minitest::Test
  Config = Spindle::Config
  Limits = Struct.new(:cpu, :memory)
  Limit = Spindle::ContainerLimits::Limit
  ONE_CPU = Limit.new(Rational(1), "cgroup v1 cpu quota 100000/100000 µs = 1 CPU (/g)")
  GIB = Limit.new(1024 * 1_048_576, "cgroup v2 memory.max 1073741824 bytes = 1024 MiB (/g)")

  def sizing(cpu: nil, memory: nil, cpus: 8, env: {})
    Config::AutoSizing.new(limits: Limits.new(cpu, memory), cpus: cpus, env: env)
  end

  def test_workers_from_a_one_cpu_quota_on_a_larger_machine
    values, notes = sizing(cpu: ONE_CPU).resolve(workers: :auto)
    assert_equal 1, values[:workers]
    assert_equal ["spindle: workers=1 (auto: cgroup v1 cpu quota 100000/100000 µs = 1 CPU (/g); 8 CPUs allowed)"], notes
  end

  def test_a_fractional_quota_is_rounded_up_and_never_below_one
    assert_equal 2, sizing(cpu: Limit.new(Rational(3, 2), "q")).resolve(workers: :auto).first[:workers]
    assert_equal 1, sizing(cpu: Limit.new(Rational(1, 10), "q")).resolve(workers: :auto).first[:workers]
  end

  # A quota larger than the CPUs the process may run on (taskset, a cpuset).
  def test_the_affinity_mask_caps_the_quota
    values, notes = sizing(cpu: Limit.new(Rational(16), "q"), cpus: 2).resolve(workers: :auto)
    assert_equal 2, values[:workers]
    assert_equal ["spindle: workers=2 (auto: q; 2 CPUs allowed)"], notes
  end

  def test_without_a_quota_the_allowed_cpus
    values, notes = sizing(cpus: 4).resolve(workers: :auto)
    assert_equal 4, values[:workers]
    assert_equal ["spindle: workers=4 (auto: no cgroup CPU quota found; 4 CPUs allowed)"], notes
  end

  def test_threads_auto_follows_rails
    assert_equal [[3, 3], ["spindle: threads=3:3 (auto: Rails 8's default; RAILS_MAX_THREADS unset)"]],
                 sizing.resolve(threads: :auto).then { |v, n| [v[:threads], n] }
    assert_equal [5, 5], sizing(env: { "RAILS_MAX_THREADS" => "5" }).resolve(threads: :auto).first[:threads]
    error = assert_raises(Config::Error) { sizing(env: { "RAILS_MAX_THREADS" => "many" }).resolve(threads: :auto) }
    assert_match(/RAILS_MAX_THREADS must be a positive integer/, error.message)
  end

  # (1024 MiB × 0.9) / (2 workers + the master) = 307.2 MiB.
  def test_worker_memory_limit_from_the_container_in_a_cluster
    values, notes = sizing(cpu: Limit.new(Rational(2), "q"), memory: GIB).resolve(workers: :auto,
                                                                                  worker_memory_limit: :auto)
    assert_equal 2, values[:workers]
    assert_equal 307, values[:worker_memory_limit]
    assert_match(/\Aspindle: worker_memory_limit=307 MiB \(auto: cgroup v2 memory.max .* × 0.9 \/ 3 shares: 2 worker/,
                 notes.last)
  end

  def test_worker_memory_limit_alone_leaves_room_for_the_restart_in_place
    values, = sizing(memory: GIB).resolve(workers: 0, worker_memory_limit: :auto)
    assert_equal 460, values[:worker_memory_limit]
  end

  def test_worker_memory_limit_without_a_container_limit_is_none_and_says_so
    values, notes = sizing.resolve(workers: 2, worker_memory_limit: :auto)
    assert_nil values[:worker_memory_limit]
    assert_equal ["spindle: worker_memory_limit: none (auto: no cgroup memory limit found)"], notes
  end

  def test_auto_is_taken_by_the_cli_the_config_file_and_rackup
    values = Spindle::CLI.new.parse(%w[--workers auto --threads auto --worker-memory-limit auto])
    assert_equal({ workers: :auto, threads: :auto, worker_memory_limit: :auto },
                 values.slice(:workers, :threads, :worker_memory_limit))
    Dir.mktmpdir do |dir|
      path = File.join(dir, "spindle.rb")
      File.write(path, "workers :auto\nthreads \"auto\"\n")
      assert_equal({ workers: :auto, threads: :auto }, Config::DSL.load(path))
    end
    assert_equal :auto, Config::RackupOptions.values(Workers: "auto")[:workers]
    assert_raises(Config::Error) { Spindle::CLI.new.parse(%w[--workers some]) }
  end

  # Config settles auto itself: what it serves with is a number, and the
  # line saying why is kept for the log.
  def test_config_holds_numbers_and_the_notes
    config = Config.build({ workers: :auto, threads: :auto }, env: {})
    assert_kind_of Integer, config.workers
    assert_operator config.workers, :>=, 1
    assert_equal [3, 3], config.threads
    assert_equal 2, config.sizing_notes.size
    assert_empty Config.build({ workers: 2 }, env: {}).sizing_notes
  end

  # --- PORT and WEB_CONCURRENCY ---------------------------------------------

  def test_port_from_the_environment_when_nothing_names_a_listener
    assert_equal ["tcp://0.0.0.0:5000"], Config.build({}, env: { "PORT" => "5000" }).binds
    assert_equal ["tcp://0.0.0.0:9292"], Config.build({}, env: {}).binds
  end

  def test_a_flag_or_the_config_file_wins_over_port
    env = { "PORT" => "5000" }
    assert_equal ["tcp://0.0.0.0:6000"], Config.build({ port: 6000 }, env: env).binds
    assert_equal ["unix:///tmp/a.sock"], Config.build({ binds: ["unix:///tmp/a.sock"] }, env: env).binds
    with_file("bind \"tcp://127.0.0.1:7000\"\n") do |path|
      assert_equal ["tcp://127.0.0.1:7000"], Config.build({ config_file: path }, env: env).binds
    end
    with_file("port 7001\n") do |path|
      assert_equal ["tcp://0.0.0.0:7001"], Config.build({ config_file: path }, env: env).binds
    end
  end

  # rails server has read PORT itself, and its -p wins over it: the
  # handler's Host and Port are where it listens.
  def test_a_rackup_handlers_host_and_port_win_over_port
    config = Config.build({}, default_binds: ["tcp://127.0.0.1:3000"], env: { "PORT" => "5000" })
    assert_equal ["tcp://127.0.0.1:3000"], config.binds
  end

  def test_a_bad_port_in_the_environment_is_refused_naming_it
    error = assert_raises(Config::Error) { Config.build({}, env: { "PORT" => "http" }) }
    assert_equal 'PORT in the environment: port must be 1-65535 (or 0 for a free port), got "http"', error.message
  end

  def test_web_concurrency_when_no_workers_are_given
    assert_equal 3, Config.build({}, env: { "WEB_CONCURRENCY" => "3" }).workers
    assert_equal 0, Config.build({}, env: { "WEB_CONCURRENCY" => "0" }).workers
    assert_equal 2, Config.build({ workers: 2 }, env: { "WEB_CONCURRENCY" => "3" }).workers
    with_file("workers 4\n") do |path|
      assert_equal 4, Config.build({ config_file: path }, env: { "WEB_CONCURRENCY" => "3" }).workers
      assert_equal 1, Config.build({ config_file: path, workers: 1 }, env: { "WEB_CONCURRENCY" => "3" }).workers
    end
    auto = Config.build({}, env: { "WEB_CONCURRENCY" => "auto" })
    assert_match(/\Aspindle: workers=#{auto.workers} \(auto: /, auto.sizing_notes.first)
    error = assert_raises(Config::Error) { Config.build({}, env: { "WEB_CONCURRENCY" => "-1" }) }
    assert_match(/\AWEB_CONCURRENCY in the environment: workers must be a non-negative integer/, error.message)
  end

  private

  def with_file(text)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "spindle.rb")
      File.write(path, text)
      yield path
    end
  end
end
