# frozen_string_literal: true

require "etc"

module Bench
  # CPU time from /proc, in clock ticks: of one process (all its threads), of
  # a server's whole process tree, and of the whole machine (busy = all but
  # idle and iowait; and the part spent in interrupts, the network stack).
  module ProcStat
    TICK = Etc.sysconf(Etc::SC_CLK_TCK).to_f

    Entry = Struct.new(:pid, :ppid, :pgrp, :ticks)

    module_function

    # The Entry for pid, or nil once it is gone.
    def read(pid)
      line = File.read("/proc/#{pid}/stat")
      # The command name (field 2) may hold spaces and parentheses: the
      # fields we want are counted from after its closing parenthesis.
      f = line[(line.rindex(")") + 2)..].split
      Entry.new(Integer(pid), Integer(f[1]), Integer(f[2]), Integer(f[11]) + Integer(f[12]))
    rescue Errno::ENOENT, Errno::ESRCH, TypeError, NoMethodError
      nil
    end

    def process_ticks(pid)
      read(pid)&.ticks
    end

    def all
      Dir.children("/proc").grep(/\A\d+\z/).filter_map { |pid| read(pid) }
    end

    # { pid => ticks } for root, its descendants and its process group. Some
    # servers move workers into groups of their own (Pitchfork does), so the
    # group alone would miss them; the parent links do not. entries: one
    # reading of /proc, to look up several trees in.
    def tree_ticks(root, entries = all)
      children = entries.group_by(&:ppid)
      found = entries.select { |e| e.pid == root || e.pgrp == root }.to_h { |e| [e.pid, e] }
      queue = found.keys
      until queue.empty?
        (children[queue.shift] || []).each do |child|
          next if found.key?(child.pid)

          found[child.pid] = child
          queue << child.pid
        end
      end
      found.transform_values(&:ticks)
    end

    # [busy, irq + softirq] for the whole machine. Loopback traffic is mostly
    # processed in softirq context, which the kernel charges to no process.
    def machine_ticks
      user, nice, system, _idle, _iowait, irq, softirq, steal = File.foreach("/proc/stat").first.split.drop(1).map { |v| Integer(v) }
      [user + nice + system + irq + softirq + steal.to_i, irq + softirq]
    end
  end
end
