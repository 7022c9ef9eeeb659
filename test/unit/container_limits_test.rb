# frozen_string_literal: true

require "test_helper"
require "spindle/ops/container_limits"
require "tmpdir"
require "fileutils"

# ContainerLimits over fixture trees written as the kernel writes them: a
# fake /proc/self (cgroup, mountinfo) and the cgroup files under a root
# directory standing for /. The real files: test/integration/container_sizing_test.rb.
class ContainerLimitsTest < Minitest::Test
  V1_MOUNTS = <<~MOUNTINFO
    22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
    30 22 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755
    31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
    34 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,memory
    35 30 0:32 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,pids
  MOUNTINFO

  V2_MOUNTS = <<~MOUNTINFO
    22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
    30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 rw,nsdelegate
  MOUNTINFO

  def setup
    @dir = Dir.mktmpdir("container-limits")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_v1_quota_of_one_cpu
    proc_files("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n2:pids:/docker/abc\n", V1_MOUNTS)
    group("sys/fs/cgroup/cpu,cpuacct/docker/abc", "cpu.cfs_quota_us" => "100000\n", "cpu.cfs_period_us" => "100000\n")
    limits = read
    assert_equal 1, limits.cpu.value
    assert_match %r{\Acgroup v1 cpu quota 100000/100000 µs = 1 CPU \(.*/sys/fs/cgroup/cpu,cpuacct/docker/abc\)\z},
                 limits.cpu.source
    assert_nil limits.memory
  end

  def test_v1_no_quota_and_no_memory_limit
    proc_files("4:memory:/a\n3:cpu,cpuacct:/a\n", V1_MOUNTS)
    group("sys/fs/cgroup/cpu,cpuacct/a", "cpu.cfs_quota_us" => "-1\n", "cpu.cfs_period_us" => "100000\n")
    group("sys/fs/cgroup/memory/a", "memory.limit_in_bytes" => "9223372036854771712\n")
    limits = read
    assert_nil limits.cpu
    assert_nil limits.memory
  end

  def test_v1_memory_limit
    proc_files("4:memory:/a\n3:cpu,cpuacct:/a\n", V1_MOUNTS)
    group("sys/fs/cgroup/memory/a", "memory.limit_in_bytes" => "536870912\n")
    limits = read
    assert_equal 536_870_912, limits.memory.value
    assert_match(/\Acgroup v1 memory.limit_in_bytes 536870912 = 512 MiB /, limits.memory.source)
  end

  # A parent's limit binds its children: the tightest on the way up wins.
  def test_v1_walks_up_to_the_tightest_quota
    proc_files("3:cpu,cpuacct:/kubepods/pod1/c1\n", V1_MOUNTS)
    base = "sys/fs/cgroup/cpu,cpuacct"
    group("#{base}/kubepods/pod1/c1", "cpu.cfs_quota_us" => "400000", "cpu.cfs_period_us" => "100000")
    group("#{base}/kubepods/pod1", "cpu.cfs_quota_us" => "150000", "cpu.cfs_period_us" => "100000")
    group("#{base}/kubepods", "cpu.cfs_quota_us" => "-1", "cpu.cfs_period_us" => "100000")
    limits = read
    assert_equal Rational(3, 2), limits.cpu.value
    assert_match %r{150000/100000 µs = 1.5 CPUs \(.*/kubepods/pod1\)\z}, limits.cpu.source
  end

  def test_v2_quota_and_memory
    proc_files("0::/system.slice/app.service\n", V2_MOUNTS)
    group("sys/fs/cgroup/system.slice/app.service", "cpu.max" => "50000 100000\n", "memory.max" => "268435456\n")
    group("sys/fs/cgroup/system.slice", "cpu.max" => "max 100000\n", "memory.max" => "max\n")
    limits = read
    assert_equal Rational(1, 2), limits.cpu.value
    assert_match %r{\Acgroup v2 cpu.max 50000 100000 = 0.5 CPUs \(.*/system.slice/app.service\)\z}, limits.cpu.source
    assert_equal 268_435_456, limits.memory.value
    assert_match(/\Acgroup v2 memory.max 268435456 bytes = 256 MiB /, limits.memory.source)
  end

  def test_v2_max_is_no_limit
    proc_files("0::/a\n", V2_MOUNTS)
    group("sys/fs/cgroup/a", "cpu.max" => "max 100000\n", "memory.max" => "max\n")
    limits = read
    assert_nil limits.cpu
    assert_nil limits.memory
  end

  # A container with its own cgroup namespace: /proc/self/cgroup says "/",
  # and the mount shows the container's group as its root.
  def test_v2_namespaced_container_reads_the_mount_top
    proc_files("0::/\n", "40 30 0:26 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n")
    group("sys/fs/cgroup", "cpu.max" => "200000 100000\n")
    assert_equal 2, read.cpu.value
  end

  # Docker without a cgroup namespace (v1): the mount's root is the
  # container's group, and /proc/self/cgroup names it from the host's root.
  def test_v1_mount_root_is_taken_off_the_group_path
    proc_files("3:cpu,cpuacct:/docker/abc\n",
               "31 30 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup rw,cpu,cpuacct\n")
    group("sys/fs/cgroup/cpu,cpuacct", "cpu.cfs_quota_us" => "100000", "cpu.cfs_period_us" => "50000")
    assert_equal 2, read.cpu.value
  end

  # Hybrid hosts (systemd's): v1 controllers beside a v2 mount that holds none.
  def test_hybrid_takes_the_v1_cpu_quota_when_v2_has_no_cpu_max
    proc_files("3:cpu,cpuacct:/a\n0::/a\n",
               "#{V1_MOUNTS}40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
    group("sys/fs/cgroup/cpu,cpuacct/a", "cpu.cfs_quota_us" => "300000", "cpu.cfs_period_us" => "100000")
    group("sys/fs/cgroup/unified/a", "cgroup.procs" => "")
    assert_equal 3, read.cpu.value
  end

  def test_mountinfo_escapes_spaces_in_paths
    proc_files("0::/a\n", "40 30 0:26 / /srv/cg\\040root rw,relatime - cgroup2 cgroup2 rw\n")
    group("srv/cg root/a", "cpu.max" => "100000 100000\n")
    assert_equal 1, read.cpu.value
  end

  def test_no_proc_files_or_unparseable_ones_mean_no_limits
    limits = Spindle::ContainerLimits.read(proc: File.join(@dir, "missing"), root: @dir)
    assert_nil limits.cpu
    assert_nil limits.memory

    proc_files("0::/a\n", V2_MOUNTS)
    group("sys/fs/cgroup/a", "cpu.max" => "lots 100000\n", "memory.max" => "\n")
    assert_nil read.cpu
    assert_nil read.memory
  end

  # A v1 hierarchy that is not mounted (only memory here) gives no CPU limit.
  def test_unmounted_controller_is_no_limit
    proc_files("3:cpu,cpuacct:/a\n", "34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
    assert_nil read.cpu
  end

  private

  def read = Spindle::ContainerLimits.read(proc: File.join(@dir, "proc"), root: @dir)

  def proc_files(cgroup, mountinfo)
    FileUtils.mkdir_p(File.join(@dir, "proc"))
    File.write(File.join(@dir, "proc", "cgroup"), cgroup)
    File.write(File.join(@dir, "proc", "mountinfo"), mountinfo)
  end

  def group(path, files)
    dir = File.join(@dir, path)
    FileUtils.mkdir_p(dir)
    files.each { |name, text| File.write(File.join(dir, name), text) }
  end
end
