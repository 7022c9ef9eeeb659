# frozen_string_literal: true

require "etc"
require "rbconfig"

module Spindle
  module Engine
    # What another thread of this process is doing, read from /proc/self/task
    # (Linux, Ruby >= 3.1 for Thread#native_thread_id): the CPU time it has
    # used, whether it waits on a futex (which is how a thread waits for
    # Ruby's GVL), and whether it is runnable (waiting for a CPU). Elsewhere it
    # knows nothing and says so (nil).
    class ThreadProbe
      TICK = 1.0 / Etc.sysconf(Etc::SC_CLK_TCK)
      FUTEX = { "x86_64" => 202, "aarch64" => 98, "riscv64" => 98, "i686" => 240, "arm" => 240 }.freeze

      def initialize(thread)
        @thread = thread
        @futex = FUTEX[RbConfig::CONFIG["host_cpu"]]&.to_s
      end

      # Seconds of CPU (user + system) the thread has used; nil when unknown.
      def cpu_seconds
        fields = stat or return nil
        (Integer(fields[11]) + Integer(fields[12])) * TICK # utime and stime, in clock ticks
      rescue TypeError, ArgumentError
        nil
      end

      # True when the thread is running or ready to run (state R); nil when unknown.
      def runnable?
        fields = stat or return nil
        fields[0] == "R"
      end

      # True when the thread is in a futex wait now; nil when unknown.
      def waiting_on_futex?
        return nil unless @futex && task_dir

        File.read("#{task_dir}/syscall").split.first == @futex
      rescue SystemCallError
        nil
      end

      private

      # The fields of /proc/.../stat after the name (the state first).
      def stat
        return nil unless task_dir

        File.read("#{task_dir}/stat").split(") ", 2).last&.split # the name may hold spaces
      rescue SystemCallError
        nil
      end

      # Known once the thread has started.
      def task_dir
        return @task_dir if @task_dir
        return nil unless @thread.respond_to?(:native_thread_id) && (id = @thread.native_thread_id)

        @task_dir = "/proc/self/task/#{id}"
      end
    end
  end
end
