# frozen_string_literal: true

module Spindle
  # The CPU quota and memory limit the kernel holds this process to: its
  # cgroup's, read the way the kernel publishes them, for --workers auto and
  # the master's memory check (docs/SIZING.md).
  #
  # Why not the machine's core count: a container given 1 CPU on a 64-core
  # host sees 64 processors, and 64 workers there share one CPU's time,
  # each stalled by the kernel's throttling in turn, with 64 times the
  # memory. The quota is what it may use.
  #
  # Where: /proc/self/cgroup names this process's group in each hierarchy
  # ("0::/path" for cgroup v2, "N:cpu,cpuacct:/path" for a v1 controller);
  # /proc/self/mountinfo says where each hierarchy is mounted, and which
  # part of it the mount shows (a container's cgroup namespace shows its
  # own group as the root). The limits of every group from this one up to
  # the mount's root apply at once, so the tightest of them is the limit.
  # Hosts with both versions mounted (hybrid) are read in both.
  #
  # Read at start; a limit changed while the server runs is not followed.
  class ContainerLimits
    # value: CPUs (a Rational) or bytes (an Integer); source: where it was
    # read, in words for the start-up log.
    Limit = Struct.new(:value, :source)

    # v1 writes "no limit" as the largest page-aligned signed 64-bit number
    # (9223372036854771712 on x86_64); anything past 2**62 means the same.
    NO_V1_MEMORY_LIMIT = 2**62

    # proc: the directory holding this process's cgroup and mountinfo files
    # (/proc/self); root: prefixed to every mount point read (tests give a
    # directory of fixture files).
    def self.read(proc: "/proc/self", root: "/")
      new(proc: proc, root: root)
    end

    attr_reader :cpu, :memory

    def initialize(proc:, root:)
      @root = root
      groups = cgroups(File.join(proc, "cgroup"))
      mounts = mounts(File.join(proc, "mountinfo"))
      dirs = directories(groups, mounts)
      @cpu = tightest(dirs.flat_map { |version, controllers, chain| cpu_limits(version, controllers, chain) })
      @memory = tightest(dirs.flat_map { |version, controllers, chain| memory_limits(version, controllers, chain) })
    end

    private

    # [[version, controllers, path]]: v2's line has no controllers (and
    # hierarchy 0), each v1 line its own.
    def cgroups(path)
      File.readlines(path, chomp: true).filter_map do |line|
        id, controllers, group = line.split(":", 3)
        next unless group

        id == "0" && controllers.empty? ? [2, [], group] : [1, controllers.split(","), group]
      end
    rescue SystemCallError
      [] # not Linux, or /proc not mounted: no limits known
    end

    # [[version, controllers, mount root, mount point]] of the cgroup mounts.
    # A mountinfo line: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER".
    def mounts(path)
      File.readlines(path, chomp: true).filter_map do |line|
        before, after = line.split(" - ", 2)
        next unless after

        type, _source, super_options = after.split(" ")
        fields = before.split(" ")
        case type
        when "cgroup2" then [2, [], unescape(fields[3]), unescape(fields[4])]
        when "cgroup" then [1, super_options.to_s.split(","), unescape(fields[3]), unescape(fields[4])]
        end
      end
    rescue SystemCallError
      []
    end

    # mountinfo writes a space in a path as \040 (and tab, newline, backslash alike).
    def unescape(field) = field.to_s.gsub(/\\([0-7]{3})/) { Regexp.last_match(1).to_i(8).chr }

    # [[version, controllers, [directory, its parent, ... up to the mount point]]]
    # for each of this process's groups whose hierarchy is mounted.
    def directories(groups, mounts)
      groups.filter_map do |version, controllers, group|
        mount = mounts.find { |v, c, _, _| v == version && (version == 2 || (controllers - c).empty?) }
        next unless mount

        [version, controllers, chain(mount[3], relative(group, mount[2]))]
      end
    end

    # The group's path inside the mount. A mount whose root is the group
    # itself (a namespaced container) shows it at its top; one whose root
    # is not above the group cannot show it, and its top is the best guess.
    def relative(group, mount_root)
      return group if mount_root == "/"
      return group.delete_prefix(mount_root) if group == mount_root || group.start_with?("#{mount_root}/")

      "/"
    end

    def chain(mount_point, inside)
      parts = inside.split("/").reject(&:empty?)
      top = File.join(@root, mount_point)
      (0..parts.size).map { |n| File.join(top, *parts.first(parts.size - n)) }
    end

    def cpu_limits(version, controllers, chain)
      return chain.filter_map { |dir| cpu_max(dir) } if version == 2
      return [] unless controllers.include?("cpu")

      chain.filter_map { |dir| cfs_quota(dir) }
    end

    # v2 cpu.max: "QUOTA PERIOD" in µs, QUOTA "max" for none.
    def cpu_max(dir)
      quota, period = read(dir, "cpu.max")&.split(" ")
      return unless int(quota)&.positive? && int(period)

      cpus(int(quota), int(period), "cgroup v2 cpu.max #{quota} #{period}", dir)
    end

    # v1: cpu.cfs_quota_us (-1 for none) per cpu.cfs_period_us.
    def cfs_quota(dir)
      quota = read(dir, "cpu.cfs_quota_us")
      period = read(dir, "cpu.cfs_period_us")
      return unless int(quota)&.positive? && int(period)

      cpus(int(quota), int(period), "cgroup v1 cpu quota #{quota}/#{period} µs", dir)
    end

    def cpus(quota, period, words, dir)
      return unless period.positive?

      value = Rational(quota, period)
      Limit.new(value, "#{words} = #{format_cpus(value)} CPU#{'s' unless value == 1} (#{dir})")
    end

    def format_cpus(value) = value.denominator == 1 ? value.to_i.to_s : value.to_f.round(2).to_s

    def memory_limits(version, controllers, chain)
      return chain.filter_map { |dir| memory_max(dir) } if version == 2
      return [] unless controllers.include?("memory")

      chain.filter_map { |dir| memory_limit_in_bytes(dir) }
    end

    def memory_max(dir)
      bytes = int(read(dir, "memory.max")) # "max": none
      return unless bytes

      Limit.new(bytes, "cgroup v2 memory.max #{bytes} bytes = #{mib(bytes)} MiB (#{dir})")
    end

    def memory_limit_in_bytes(dir)
      bytes = int(read(dir, "memory.limit_in_bytes"))
      return unless bytes && bytes < NO_V1_MEMORY_LIMIT

      Limit.new(bytes, "cgroup v1 memory.limit_in_bytes #{bytes} = #{mib(bytes)} MiB (#{dir})")
    end

    def mib(bytes) = bytes / 1_048_576

    # A file that is not there (a group without that controller, the root
    # group's, which has no limit files) is no limit; neither is one that
    # does not parse.
    def read(dir, name)
      File.read(File.join(dir, name)).strip
    rescue SystemCallError
      nil
    end

    def int(text) = text && Integer(text, 10, exception: false)

    def tightest(limits) = limits.min_by(&:value)
  end
end
