# frozen_string_literal: true

require_relative "proc_stat"

module Bench
  # A cpu cgroup of its own for a process tree, as systemd gives each service
  # one. Bench::PgSupport puts the run's PostgreSQL in one.
  #
  # Why: on a machine whose processes sit in the root cgroup, the kernel's
  # autogroup feature makes each session a scheduling group, and PostgreSQL
  # starts a session (setsid) for every backend. Under a threaded server with
  # 10 connections on 2 busy cores, woken backends then waited up to 1 s for a
  # core (perf sched timehist), so a query answered in under 100 ms by the
  # backend's own account took a second to reach the app: Rails on Ruby 3.3,
  # 2 processes of 5 threads, had a p99 of 200-700 ms against 30 ms with the
  # backends in one group (Puma's too). Production has the database in a
  # service's cgroup or on another machine, not as ten groups of its own.
  class CpuGroup
    ROOT = "/sys/fs/cgroup"

    attr_reader :path, :why_not

    # name: the group's directory under the cpu hierarchy (v1: ROOT/cpu, v2:
    # ROOT itself when it offers the cpu controller).
    def initialize(name, root: ROOT)
      base = hierarchy(root)
      @why_not = base ? nil : "no cpu cgroup hierarchy under #{root}"
      @path = base && File.join(base, name)
      @unified = base == root
    end

    # Moves pid and its children (the processes it has already started; what
    # it starts later is born in the group). True, or false with #why_not.
    def add_tree(pid)
      return false unless @path

      # v2: a child has the cpu controller only once its parent hands it down.
      File.write(File.join(File.dirname(@path), "cgroup.subtree_control"), "+cpu") if @unified
      Dir.mkdir(@path) unless Dir.exist?(@path)
      File.open(File.join(@path, "cgroup.procs"), "a") { |f| [pid, *children(pid)].each { |p| f.syswrite("#{p}\n") } }
      true
    rescue SystemCallError => e
      @why_not = "could not use #{@path}: #{e.message}"
      false
    end

    # Empties and removes the group (the kernel refuses while it has members).
    def remove
      Dir.rmdir(@path) if @path && Dir.exist?(@path)
    rescue SystemCallError
      nil
    end

    private

    def hierarchy(root)
      v1 = File.join(root, "cpu")
      return v1 if File.exist?(File.join(v1, "cgroup.procs"))

      controllers = File.join(root, "cgroup.controllers")
      root if File.exist?(controllers) && File.read(controllers).split.include?("cpu")
    end

    def children(pid) = ProcStat.all.select { |e| e.ppid == pid }.map(&:pid)
  end
end
