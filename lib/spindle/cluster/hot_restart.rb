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
      # instead of `ruby bin/spindle ARGV` (the rackup handler gives its own
      # process's command line).
      def remember(argv, command: [RbConfig.ruby, BIN])
        @command = command + argv
        @dir = Dir.pwd
      end

      def start(listeners)
        listeners.each { |l| l.io.close_on_exec = false }
        env = { LISTENERS => listeners.map(&:handover).join(","), PARENT => Process.pid.to_s }
        keep = listeners.to_h { |l| [l.io.fileno, l.io.fileno] }
        # Not on this process's CPU (--cpu-affinity): the successor reads its
        # own configuration, and pins itself if that asks it to.
        CpuAffinity.unpinned { Process.spawn(env, *@command, chdir: @dir, **keep) }
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
