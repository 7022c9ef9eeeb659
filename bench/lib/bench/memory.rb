# frozen_string_literal: true

require "json"
require "shellwords"
require "fileutils"
require "socket"
require "io/wait"
require_relative "paths"
require_relative "proc_stat"
require_relative "server_spec"
require_relative "server_process"
require_relative "log"
require_relative "child"
require_relative "wrk_trial"
require_relative "wrk"

module Bench
  # What the memory scenarios (refork, refork-rps, arenas, leak) share: memory
  # figures from /proc, a process's tree, servers started with their own flags
  # (a control socket, fork_worker) through the same ServerProcess as every
  # other start, spindlectl, and bounded wrk runs. Nothing here is used by the
  # throughput scenarios.
  module Memory
    module_function

    # { rss:, pss:, uss: } in bytes from /proc/PID/smaps_rollup (uss = the
    # private pages), or nil once the process is gone.
    def rollup(pid)
      text = File.read("/proc/#{pid}/smaps_rollup")
      kib = ->(field) { text[/^#{field}:\s+(\d+) kB/, 1].to_i * 1024 }
      { rss: kib.call("Rss"), pss: kib.call("Pss"), uss: kib.call("Private_Clean") + kib.call("Private_Dirty") }
    rescue Errno::ENOENT, Errno::ESRCH, Errno::EACCES
      nil
    end

    # VmRSS in bytes (cheap enough to sample every 100 ms), nil once gone.
    def rss(pid)
      File.read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end

    def cmdline(pid)
      File.read("/proc/#{pid}/cmdline").tr("\0", " ").strip
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end

    def environ(pid)
      File.read("/proc/#{pid}/environ").split("\0").to_h { |kv| kv.split("=", 2) }
    rescue Errno::ENOENT, Errno::ESRCH
      {}
    end

    # Which malloc the process has mapped.
    def allocator(pid)
      File.read("/proc/#{pid}/maps").include?("libjemalloc") ? "jemalloc" : "glibc"
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end

    # root and every descendant (and its process group), as
    # [{ pid:, ppid:, cmd: }], root first.
    def tree(root)
      ProcStat.tree_ticks(root).keys.sort.filter_map do |pid|
        entry = ProcStat.read(pid) or next
        { pid: pid, ppid: entry.ppid, cmd: cmdline(pid).to_s }
      end
    end

    # Sums over a server's whole process tree (root, its descendants, its
    # group): resident set and proportional set (each shared page split
    # between the processes mapping it, so workers forked from one master are
    # not counted twice) in KiB, open descriptors, threads.
    def tree_rss_kib(root) = tree_sum(root) { |pid| File.read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+)/, 1].to_i }
    def tree_pss_kib(root) = tree_sum(root) { |pid| File.read("/proc/#{pid}/smaps_rollup")[/^Pss:\s+(\d+)/, 1].to_i }
    def tree_fds(root) = tree_sum(root) { |pid| Dir.children("/proc/#{pid}/fd").size }
    def tree_threads(root) = tree_sum(root) { |pid| Dir.children("/proc/#{pid}/task").size }

    def tree_sum(root)
      ProcStat.tree_ticks(root).keys.sum do |pid|
        yield pid
      rescue Errno::ENOENT, Errno::ESRCH, Errno::EACCES
        0 # gone since the tree was read
      end
    end

    def mb(bytes) = bytes && (bytes / 1048576.0).round(1)

    # Starts a server from an argv built by the block (not from the
    # registry): same environment, process group, readiness check and stop as
    # every start. target: a Bench::Scenario (its app, path, expected body and
    # env); runtime: :spindle or :peers. Returns the started ServerProcess.
    def start(name:, runtime:, target:, processes: 1, threads: 5, ready_timeout: 120, &command)
      spec = ServerSpec.new(name: name, family: runtime == :spindle ? :spindle : :peer, runtime: runtime,
                            command: command, ready_timeout: ready_timeout)
      server = ServerProcess.for(spec: spec, scenario: target, threads: threads, processes: processes)
      Log.info("starting #{name}: #{server.command_line}")
      server.start
    end

    # One command on Spindle's control socket, in-process (the raw protocol:
    # one JSON line each way, docs/STATS.md): cheap enough to poll while wrk
    # measures, unlike starting bin/spindlectl.
    def control(socket, command, timeout: 10)
      UNIXSocket.open(socket) do |s|
        s.puts(JSON.generate("command" => command))
        raise "control #{command}: no answer within #{timeout} s" unless s.wait_readable(timeout)

        JSON.parse(s.gets || raise("control #{command}: connection closed"))
      end
    end

    # A wrk run for the memory scenarios: 1 thread, no CPU sampling; figures
    # as their records keep them (socket errors as wrk prints them, nil: none).
    def wrk(url, connections:, duration:, headers: [], timeout: 10)
      Wrk.new(server_pid: nil, url: url, connections: connections, duration: duration, threads: 1, timeout: timeout, headers: headers)
    end

    def wrk_run(url, **options)
      run = wrk(url, **options).run
      wrk_figures(run.result).merge(wrk: WrkTrial.command_line(run.argv))
    end

    def wrk_figures(r)
      errors = %i[connect read write].map { |k| [k, r[:"#{k}_errors"]] } + [[:timeout, r[:timeouts]]]
      { requests: r[:requests], requests_per_sec: (r[:requests] / (r[:duration_us] / 1e6)).round(2),
        socket_errors: errors.all? { |_, n| n.zero? } ? nil : errors.map { |k, n| "#{k} #{n}" }.join(", "),
        non_2xx: r[:status_errors] }
    end
  end
end
