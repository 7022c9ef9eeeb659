# frozen_string_literal: true

require "open3"

class Topology
  # The processes a topology started: each in its own process group, its
  # output in a log file in the run directory (a file never blocks a server
  # the way an unread pipe would), stopped by #stop_all.
  class Processes
    STOP_DEADLINE = 15

    # One started process. nsenter execs its command, so pid is the
    # command's own.
    class Entry
      attr_reader :name, :pid, :log

      def initialize(name, pid, log)
        @name = name
        @pid = pid
        @log = log
        @status = nil
      end

      def alive?
        return false if @status

        _, status = Process.wait2(@pid, Process::WNOHANG)
        @status = status if status
        @status.nil?
      rescue Errno::ECHILD
        false
      end

      def status
        alive?
        @status
      end

      def log_tail(lines = 40) = File.exist?(@log) ? File.readlines(@log).last(lines).join : "(no log)"

      # Sends signal to the process group (the server and what it forked).
      def signal(signal)
        Process.kill(signal, -@pid)
      rescue Errno::ESRCH
        nil
      end

      # Waits for the exit up to deadline seconds; true when it exited.
      def wait(deadline)
        limit = Processes.now + deadline
        sleep 0.05 while alive? && Processes.now < limit
        !alive?
      end
    end

    def initialize(dir)
      @dir = dir
      @entries = []
    end

    def spawn(name, argv, env: {}, chdir: Dir.pwd)
      log = File.join(@dir, "#{name}.log")
      pid = Process.spawn(env, *argv, in: File::NULL, out: [log, "a"], err: [:child, :out], pgroup: true, chdir: chdir)
      Entry.new(name.to_s, pid, log).tap { |e| @entries << e }
    end

    def find(name) = @entries.find { |e| e.name == name.to_s }

    # TERM to each group, KILL to what is left after the deadline.
    def stop_all
      live = @entries.select(&:alive?)
      live.each { |e| e.signal(:TERM) }
      limit = Processes.now + STOP_DEADLINE
      live.each { |e| e.wait([limit - Processes.now, 0.1].max) }
      live.each { |e| e.signal(:KILL) }
      live.each { |e| e.wait(2) }
    end

    def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def self.kill(pid, signal = :KILL)
      Process.kill(signal, pid)
    rescue Errno::ESRCH
      nil
    end

    # Neither gone nor a zombie (a dead child its parent has not reaped yet).
    def self.running?(pid)
      File.read("/proc/#{pid}/stat")[/\) (\S)/, 1] != "Z"
    rescue Errno::ENOENT, Errno::ESRCH
      false
    end

    # Runs argv to its end within timeout seconds (killed past it).
    def self.capture(argv, timeout: 60)
      Open3.popen3(*argv, pgroup: true) do |stdin, stdout, stderr, thread|
        stdin.close
        readers = [Thread.new { stdout.read }, Thread.new { stderr.read }]
        unless thread.join(timeout)
          Process.kill(:KILL, -thread.pid)
          thread.join
        end
        [readers[0].value, readers[1].value, thread.value]
      end
    end
  end
end
