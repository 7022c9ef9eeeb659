# frozen_string_literal: true

require "rbconfig"
require_relative "../listener"
require_relative "../ops/cpu_affinity"

module Spindle
  module Cluster
    # USR2: starts a new master from the same command line (new code) and hands
    # it the listening sockets across exec, so no connection is ever refused.
    # The new master tells the old one to drain (QUIT) once its workers serve.
    module HotRestart
      LISTENERS = "SPINDLE_INHERITED_LISTENERS"
      PARENT = "SPINDLE_PARENT_MASTER"
      BIN = File.expand_path("../../../bin/spindle", __dir__)

      module_function

      # Recorded at start, before anything changes them. command: what to run
      # instead of `ruby bin/spindle ARGV`, and dir: where (the rackup handler
      # gives its own process's, RackupRestart); pid_file: rackup's, which the
      # successor must find free.
      def remember(argv, command: [RbConfig.ruby, BIN], dir: Dir.pwd, pid_file: nil)
        @command = command + argv
        @dir = dir
        @pid_file = pid_file
      end

      # Whether there is a command line to rerun (#remember).
      def command? = !@command.nil?

      def start(listeners)
        release_pid_file(@pid_file)
        listeners.each { |l| l.io.close_on_exec = false }
        env = { LISTENERS => listeners.map(&:handover).join(","), PARENT => Process.pid.to_s }
        keep = listeners.to_h { |l| [l.io.fileno, l.io.fileno] }
        # Not on this process's CPU (--cpu-affinity): the successor reads its
        # own configuration, and pins itself if that asks it to.
        CpuAffinity.unpinned { Process.spawn(env, *@command, chdir: @dir, **keep) }
      end

      # rackup's pid file, if it names this process: a rackup successor
      # refuses to start while it names a live server ("A server is already
      # running"), and so does a process this one replaces by exec.
      def release_pid_file(path)
        File.delete(path) if path && File.read(path).to_i == Process.pid
      rescue SystemCallError
        nil
      end

      # The listeners a previous master handed over, or nil.
      def inherited_listeners
        specs = ENV.delete(LISTENERS)
        specs&.split(",")&.map { |spec| Listener.inherit(spec) }
      end

      # The previous master's pid, to be told to drain once we serve.
      def parent = ENV.delete(PARENT)&.to_i
    end
  end
end
