# frozen_string_literal: true

require_relative "../cluster/hot_restart"
require_relative "../systemd/notifier"
require_relative "restart_file"

module Spindle
  # USR2 for a process serving alone (no -w): new code without a refused
  # connection, like Puma's restart. The process starts its successor from the
  # same command line and hands it the listening sockets across exec
  # (Cluster::HotRestart, which the master uses for the same). Both accept for
  # a moment; once the successor serves, it sends this process QUIT, and this
  # one drains with no time limit. The pid changes.
  #
  # One successor at a time: a USR2 while one starts is refused, so two
  # processes never end up serving for good. A successor that exits before it
  # serves (an app that fails to load, say) leaves this process serving, and
  # says so; the next USR2 tries again.
  class SingleRestart
    # command_line: whether a command line was recorded (HotRestart.remember:
    # bin/spindle's, or the rackup handler's from /proc, RackupRestart).
    # phase: the process's Phase: once it stops, a successor that exits
    # changes nothing.
    def initialize(log, listeners, phase:, command_line:, notifier: Systemd::Notifier::OFF)
      @log = log
      @notifier = notifier
      @listeners = listeners
      @phase = phase
      @command_line = command_line
      @successor = nil
    end

    # In a successor: the listeners its predecessor handed over, or nil.
    def self.inherited_listeners = Cluster::HotRestart.inherited_listeners

    # In a successor: the pid of the process it replaces, or nil.
    def self.predecessor = Cluster::HotRestart.parent

    # In a successor that now serves: the predecessor may drain.
    def self.tell_predecessor(pid, log)
      Process.kill(:QUIT, pid)
      log.info("spindle: serving; told the previous process (pid #{pid}) to drain")
    rescue Errno::ESRCH, Errno::EPERM
      nil # it is gone already
    end

    # From the signal thread, on USR2.
    def start
      return refuse("no command line to rerun (rackup without /proc)") unless @command_line
      return refuse("new process pid #{@successor} is still starting") if @successor

      @successor = Cluster::HotRestart.start(@listeners)
      @log.info("spindle: restart: new process pid #{@successor} shares the listeners; " \
                "this one drains once it serves")
      @notifier.reloading(status: "restart: new process pid #{@successor} starting")
      Thread.new(@successor) { |pid| watch(pid) }
    end

    # --restart-file: a thread polls path; a change restarts this process as
    # USR2 does (through its own signal, so the same checks apply), or says
    # why it cannot. Stops once the process does.
    def watch_file(path)
      file = RestartFile.new(path)
      Thread.new do
        Thread.current.name = "spindle restart file"
        until @phase.stopping?
          file_changed(path) if file.changed?
          sleep RestartFile::INTERVAL / 2
        end
      end
    end

    # Whether USR2 can restart this process (MemoryLimit asks before it does).
    def command_line? = @command_line

    # While a successor lives, the listeners (and a unix socket's file) are its
    # too: closing them here must not unlink the file, and a stop that comes
    # meanwhile is the hand-over (Server#stop_gracefully: Phase#hand_over!).
    def successor? = !@successor.nil?

    private

    def file_changed(path)
      unless @command_line
        return @log.info("spindle: #{path} changed, but this process has no command line to rerun " \
                         "(rackup without /proc): not restarted")
      end

      @log.info("spindle: #{path} changed: hot restart (as USR2)")
      Process.kill(:USR2, Process.pid)
    end

    def refuse(why)
      @log.info("spindle: USR2 ignored: #{why}")
    end

    # Reaps the successor. Exiting before this process stops means it never
    # served: its predecessor keeps serving, alone again.
    def watch(pid)
      _, status = Process.wait2(pid)
      @successor = nil
      return if @phase.stopping?

      how = status.exitstatus ? "status #{status.exitstatus}" : "signal #{status.termsig}"
      @log.error("restart failed: new process pid #{pid} exited (#{how}) before it served; still serving here")
      @notifier.ready(status: "restart failed: new process exited before it served; serving (previous process)")
    end
  end
end
