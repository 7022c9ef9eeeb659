# frozen_string_literal: true

require "etc"
require "fileutils"
require_relative "../support/command_process"

# --workers auto and --worker-memory-limit auto in real cgroups: a child
# group of this process's own, given a quota, with bin/spindle moved into it
# before it execs (so everything it forks is in it too), as a container
# runtime does. And PORT and WEB_CONCURRENCY through bin/spindle. The file
# formats' corners: test/unit/container_limits_test.rb.
class ContainerSizingTest < SpindleIntegrationTest
  # Moves itself into the group(s) named after "--", then becomes bin/spindle.
  ENTER = 'for procs in "$@"; do [ "$procs" = -- ] && break; echo $$ > "$procs"; shift; done; shift; exec "$@"'

  def before_setup
    super
    @groups = []
  end

  def after_teardown
    super # the servers are gone first: a group with a process in it cannot be removed
  ensure
    @groups.reverse_each { |dir| remove_group(dir) }
  end

  def test_workers_auto_in_a_one_cpu_v1_quota_starts_one_worker_and_says_so
    skip "one CPU here: --workers auto starts one worker with or without a quota" if Etc.nprocessors < 2
    cpu = group(1, "cpu")
    File.write(File.join(cpu, "cpu.cfs_period_us"), "100000")
    File.write(File.join(cpu, "cpu.cfs_quota_us"), "100000")

    process = start_in([cpu], "--workers", "auto", "-b", LOOPBACK, app_path("echo"))
    assert_match(%r{spindle: workers=1 \(auto: cgroup v1 cpu quota 100000/100000 µs = 1 CPU \(#{cpu}\); \d+ CPUs allowed\)},
                 process.output)
    assert_match(/ workers=1 /, process.start_line)
    wait_until("worker 0 serving") { process.output.include?("worker 0 added") }
    assert_equal 200, roundtrip(request("GET", "/", [["Connection", "close"]]), process).status
    assert_includes File.read(File.join(cpu, "cgroup.procs")).split.map(&:to_i), process.pid
    refute_match(/worker 1 added/, process.output)
  end

  def test_worker_memory_limit_auto_and_the_fit_in_a_v1_memory_limit
    memory = group(1, "memory")
    File.write(File.join(memory, "memory.limit_in_bytes"), (2048 * 1_048_576).to_s)

    process = start_in([memory], "--workers", "2", "--worker-memory-limit", "auto", "-b", LOOPBACK, app_path("echo"))
    # 2048 MiB × 0.9 / 3 (2 workers and the master)
    assert_match(/spindle: worker_memory_limit=614 MiB \(auto: cgroup v1 memory.limit_in_bytes 2147483648 = 2048 MiB/,
                 process.output)
    wait_until("the memory check once both workers serve") { process.output.include?("spindle: memory: ") }
    assert_match(/spindle: memory: 2 workers × \d+ MiB \(the largest worker's PSS, just booted\) \+ the master's \d+ MiB = \d+ MiB, within the container's limit/,
                 process.output)
  end

  def test_workers_auto_in_a_v2_cpu_max
    cpu = group(2, "cpu")
    File.write(File.join(cpu, "cpu.max"), "100000 100000")

    process = start_in([cpu], "--workers", "auto", "-b", LOOPBACK, app_path("echo"))
    assert_match(%r{spindle: workers=1 \(auto: cgroup v2 cpu.max 100000 100000 = 1 CPU \(#{cpu}\)}, process.output)
    assert_match(/ workers=1 /, process.start_line)
  end

  # Rails 8's conventions: a bin/spindle given no listener serves on PORT,
  # and WEB_CONCURRENCY sizes the cluster when -w does not.
  def test_port_and_web_concurrency_from_the_environment
    port = free_port
    process = spawn_server(app_path("echo"), env: { "PORT" => port.to_s, "WEB_CONCURRENCY" => "2" })
    assert_equal ["tcp://0.0.0.0:#{port}"], process.binds.map(&:uri)
    assert_match(/ workers=2 /, process.start_line)

    flagged = spawn_server("-w", "1", "-b", LOOPBACK, app_path("echo"),
                           env: { "PORT" => free_port.to_s, "WEB_CONCURRENCY" => "2" })
    assert_match(/ workers=1 /, flagged.start_line)
    assert_equal "127.0.0.1", flagged.binds.first.host
  end

  private

  def start_in(procs_dirs, *args)
    procs = procs_dirs.map { |dir| File.join(dir, "cgroup.procs") }
    process = CommandProcess.start(["sh", "-c", ENTER, "sh", *procs, "--", RbConfig.ruby, SpindleProcess::BIN], *args)
    @processes << process
    process
  end

  # A new child group of this process's own group in the hierarchy holding
  # controller (version 1 or 2), or a skip saying why there is none.
  def group(version, controller)
    skip "creating cgroups needs root" unless Process.uid.zero?
    base = own_group(version, controller) || skip("no cgroup v#{version} hierarchy with #{controller} mounted here")
    if version == 2
      controllers = File.read(File.join(base, "cgroup.controllers")).split
      skip "cgroup v2 here offers no #{controller} controller (cgroup.controllers: #{controllers.join(' ')}); " \
           "a hybrid host binds it to v1" unless controllers.include?(controller)
      File.write(File.join(base, "cgroup.subtree_control"), "+#{controller}")
    end
    dir = File.join(base, "spindle-test-#{Process.pid}-#{rand(1 << 32)}")
    Dir.mkdir(dir)
    @groups << dir
    dir
  rescue Errno::EACCES, Errno::EROFS, Errno::EPERM, Errno::EBUSY => e
    skip "cgroup v#{version} #{controller} is not writable here: #{e.message}"
  end

  # This process's group directory in that hierarchy, from /proc/self.
  def own_group(version, controller)
    line = File.readlines("/proc/self/cgroup", chomp: true).map { |l| l.split(":", 3) }.find do |id, list, _|
      version == 2 ? id == "0" && list.empty? : list.split(",").include?(controller)
    end
    mount = File.readlines("/proc/self/mountinfo").map(&:split).find do |fields|
      type, _, options = fields[(fields.index("-") + 1)..]
      version == 2 ? type == "cgroup2" : type == "cgroup" && options.split(",").include?(controller)
    end
    return unless line && mount

    File.join(mount[4], line[2].delete_prefix(mount[3] == "/" ? "" : mount[3]))
  end

  def remove_group(dir)
    wait_until("cgroup #{dir} empty and removed", deadline: 10) do
      Dir.rmdir(dir)
      true
    rescue Errno::EBUSY
      false
    rescue Errno::ENOENT
      true
    end
  end
end
