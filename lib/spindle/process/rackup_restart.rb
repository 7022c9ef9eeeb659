# frozen_string_literal: true

require_relative "../cluster/hot_restart"
require_relative "../ops/live_pid"

module Spindle
  # USR2 (and --restart-file) for a server started through rackup or `rails
  # server -u spindle`: the new process is started from the command line the
  # kernel recorded for this one (/proc/self/cmdline: `ruby bin/rails server
  # -u spindle -p 3000` as typed; rackup has consumed ARGV by the time the
  # handler runs), in the directory it was started from, with this process's
  # environment, and it takes the listeners over as bin/spindle's successor
  # does (Cluster::HotRestart). Without /proc there is no command line to
  # rerun, and USR2 says so.
  #
  # rackup's pid file (`rails server` writes tmp/pids/server.pid in
  # development, or PIDFILE) is in the way twice: the new process refuses to
  # start while the file names a live server, and this process's exit hook
  # (rackup's, not ours) deletes the file whoever it names by then. So this
  # process lets the file go as it starts its successor (HotRestart#start),
  # and the successor writes its own pid back once this one has exited
  # (#reclaim_pid_file).
  module RackupRestart
    # How often a successor looks whether its predecessor has exited.
    POLL = 0.5

    module_function

    # At start: true when there is a command line to rerun.
    def remember(pid_file)
      command = own_command_line
      return false unless command

      Cluster::HotRestart.remember([], command: command, dir: launch_dir(command), pid_file: pid_file)
      true
    end

    # The command line the kernel recorded for this process. nil without /proc.
    def own_command_line
      File.binread("/proc/self/cmdline").split("\0")
    rescue SystemCallError
      nil
    end

    # `rails server` may have moved to the app's root since it started
    # (when started from a subdirectory, to find config.ru); a relative
    # script path on the command line is relative to the shell's directory,
    # which the shell left in PWD. The first directory the script is found
    # from.
    def launch_dir(command)
      script = command[1]
      dirs = [ENV.fetch("PWD", nil), Dir.pwd].compact.select { |dir| File.directory?(dir) }
      dirs.find { |dir| script && File.exist?(File.expand_path(script, dir)) } || Dir.pwd
    end

    # In a successor (the predecessor's pid in the environment): once the
    # predecessor has exited, and its rackup exit hook has deleted the pid
    # file, this process's pid goes back into it.
    def reclaim_pid_file(path)
      predecessor = ENV[Cluster::HotRestart::PARENT]&.to_i
      return unless path && predecessor

      Thread.new do
        Thread.current.name = "spindle pid file"
        sleep POLL while LivePid.alive?(predecessor)
        File.write(path, Process.pid.to_s) unless File.exist?(path)
      end
    end
  end
end
