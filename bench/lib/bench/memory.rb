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
    # group): resident set in KiB, open descriptors, threads.
    def tree_rss_kib(root) = tree_sum(root) { |pid| File.read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+)/, 1].to_i }
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

    # A plain wrk run (wrk's own text output, no Lua) against 127.0.0.1 in the
    # background, bounded by its duration (killed 20 s past it by #wrk_finish,
    # or at once by Child.kill). Returns [pid, argv].
    def wrk_spawn(url, connections:, duration:, headers: [], timeout: 10, log: File::NULL)
      raise ArgumentError, "not a loopback URL: #{url}" unless url.start_with?("http://127.0.0.1:")

      argv = ["wrk", "-t", "1", "-c", connections.to_s, "-d", "#{duration}s", "--timeout", "#{timeout}s",
              *headers.flat_map { |h| ["-H", h] }, url]
      pid = Process.spawn(*argv, out: log, err: log, in: File::NULL, pgroup: true)
      [pid, argv]
    end

    def wrk_finish(pid, duration) = Child.wait(pid, duration + 20)

    # wrk's own summary (Requests/sec, totals) from its plain output.
    def wrk_parse(text)
      {
        requests: text[/(\d+) requests in/, 1]&.to_i,
        requests_per_sec: text[/Requests\/sec:\s+([\d.]+)/, 1]&.to_f,
        socket_errors: text[/Socket errors: (.*)$/, 1],
        non_2xx: text[/Non-2xx or 3xx responses: (\d+)/, 1].to_i
      }
    end

    # One bounded wrk run in the foreground; returns wrk_parse's figures.
    def wrk_run(url, connections:, duration:, headers: [], timeout: 10)
      out = File.join(Paths::TMP, "memory-wrk-#{Process.pid}.txt")
      File.open(out, "w") do |log|
        pid, argv = wrk_spawn(url, connections: connections, duration: duration, headers: headers, timeout: timeout, log: log)
        wrk_finish(pid, duration)
        return wrk_parse(File.read(out)).merge(wrk: WrkTrial.command_line(argv))
      end
    end
  end
end
