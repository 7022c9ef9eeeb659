# frozen_string_literal: true

# CpuAffinity.cpus and .set come from the extension (ext/spindle/cpu_affinity.c),
# which loads with the parser.
require_relative "../http/parser"

module Spindle
  # --cpu-affinity: each serving process runs on one CPU, with all its
  # threads (#pin), or with only those that run the app (#pin_app).
  #
  # A process holds one GVL, so its threads (the threads engine's pool and
  # reactor, hybrid's loops) run Ruby one at a time: about one core's worth
  # of work. Unpinned, each handoff of the GVL wakes the next thread wherever
  # the kernel places it, and that core's worth is spread over every core in
  # short runs that push aside whatever else runs there. A database on the
  # same host is what waited: its backends waited for a core, and a
  # database-backed page's tail under hybrid grew to several times that of
  # the one-thread fibers engine; pinned, it came back close to it. On
  # the Rails page both threaded engines served more pinned (ENGINES.md,
  # which also says where it cost threads; the figures: PERFORMANCE.md,
  # "The figures behind lib/'s comments").
  module CpuAffinity
    class << self
      # The CPUs this process may use (taskset's, a cpuset's), read once,
      # before the process pins itself: a worker forked from a pinned mold
      # inherits the list the mold read, not the mold's one CPU. nil off Linux.
      def allowed = defined?(@allowed) ? @allowed : (@allowed = cpus(0))

      # Pins this process, the threads it has and those it starts later, to
      # the CPU of slot (a worker's index; 0 alone): the slot-th allowed CPU,
      # round the list. Returns that CPU, or nil where CPUs cannot be chosen.
      def pin(slot)
        return nil unless allowed

        cpu = allowed[slot % allowed.size]
        Dir.children("/proc/self/task").each { |tid| pin_thread(Integer(tid), [cpu]) }
        cpu
      end

      # --cpu-affinity=app: chooses the CPU of slot, as #pin does, for the
      # threads that run the app, each of which pins itself as it starts
      # (#app_thread); the others, this one among them, stay on every
      # allowed CPU. base shifts slot 0 to another CPU (#base, for auto).
      # Returns that CPU, or nil where CPUs cannot be chosen.
      #
      # Why not the whole process: under the threads engine the reactor
      # then shares the pool's CPU. On light requests that cost throughput
      # (PERFORMANCE.md, "The figures behind lib/'s comments"); with only the pool pinned,
      # the reactor and PostgreSQL ran beside it, the tail stayed short,
      # and the Rails page kept the gain (ENGINES.md).
      def pin_app(slot, base: 0)
        return nil unless allowed

        set(0, allowed) # a worker forked by a pinned thread of its mold
        @app_lock = Thread::Mutex.new
        @app_tids = [] # a mold's, inherited by this worker, name no thread here
        @app_cpu = allowed[(base + slot) % allowed.size]
      end

      # --cpu-affinity=auto: a random index into #allowed for this server's
      # slot 0, drawn once (in the master, before it forks), so that servers
      # started alike on one host, containers with small pids among them,
      # do not all start on the first CPU.
      def base = @base ||= allowed ? rand(allowed.size) : 0

      # Runs a thread that runs the app (the block: its whole life) on the
      # CPU #pin_app chose, if it was called in this process; otherwise as it
      # is. Threads it starts inherit the CPU. Unpinned again at the end:
      # Ruby hands an ended thread's native thread to the next Thread.new.
      def app_thread
        return yield unless defined?(@app_lock)

        tid = Thread.current.native_thread_id
        @app_lock.synchronize do
          settle(0, [@app_cpu]) if @app_cpu
          @app_tids << tid
        end
        begin
          yield
        ensure
          @app_lock.synchronize { @app_tids.delete(tid) }
          settle(0, allowed)
        end
      end

      # The CPU the app's threads are on now; nil once #move_app unpinned them.
      def app_cpu = defined?(@app_cpu) ? @app_cpu : nil

      # The native ids of the threads running the app now (#app_thread).
      def app_tids = defined?(@app_lock) ? @app_lock.synchronize { @app_tids.dup } : []

      # Moves the app's threads, running and to come, to cpu; nil: to every
      # allowed CPU, for good (AffinityWatch, when their CPU is taken).
      def move_app(cpu)
        @app_lock.synchronize do
          @app_cpu = cpu
          @app_tids.each { |tid| settle(tid, cpu ? [cpu] : allowed) }
        end
      end

      # Runs the block with this thread on every allowed CPU again, for a
      # process it starts (which inherits the starting thread's CPUs); a
      # process that never pinned itself runs it as it is.
      def unpinned
        return yield unless defined?(@allowed) && @allowed

        pinned = cpus(0)
        set(0, @allowed)
        begin
          yield
        ensure
          set(0, pinned)
        end
      end

      private

      # A thread that ended since the listing is no longer there to pin.
      def pin_thread(tid, cpus)
        set(tid, cpus)
      rescue Errno::ESRCH
        nil
      end

      # Pins an app thread, or leaves it where it is: a cpuset changed under
      # the process (EINVAL) must not end a thread that serves requests.
      def settle(tid, cpus)
        set(tid, cpus)
      rescue SystemCallError
        nil
      end
    end
  end
end
