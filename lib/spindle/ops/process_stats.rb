# frozen_string_literal: true

module Spindle
  # Memory of a process as the kernel accounts it (/proc/PID/smaps_rollup):
  # RSS counts every resident page; PSS divides shared pages among the
  # processes sharing them (so summing PSS over workers is the real total);
  # USS counts only the pages no other process shares (what exiting it frees).
  module ProcessStats
    FIELDS = { "Rss" => :rss, "Pss" => :pss, "Private_Clean" => :private_clean,
               "Private_Dirty" => :private_dirty }.freeze

    module_function

    # Bytes: { rss:, pss:, uss: }, or nil when the process is gone.
    def memory(pid = Process.pid)
      values = {}
      File.foreach("/proc/#{pid}/smaps_rollup") do |line|
        name, kb = line.split(":", 2)
        key = FIELDS[name]
        values[key] = kb.to_i * 1024 if key
      end
      { rss: values[:rss], pss: values[:pss], uss: values[:private_clean].to_i + values[:private_dirty].to_i }
    rescue Errno::ENOENT, Errno::ESRCH, Errno::EACCES
      nil
    end

    # The allocator this process runs on, from its mapped libraries.
    def allocator(pid = Process.pid)
      maps = File.read("/proc/#{pid}/maps")
      maps.include?("libjemalloc") ? "jemalloc" : "glibc"
    rescue Errno::ENOENT, Errno::EACCES
      "unknown"
    end

    def gc
      stat = GC.stat
      { count: stat[:count], major: stat[:major_gc_count], minor: stat[:minor_gc_count],
        heap_live_slots: stat[:heap_live_slots] }
    end
  end
end
