# frozen_string_literal: true

require "rbconfig"

module Bench
  # How the refork scenarios start each server and make it refork, in one
  # place so that `refork` and `refork_rps` measure exactly the same setups.
  #   spindle:   cluster with a control socket; `spindlectl refork`; --lean-heap,
  #              as docs/REFORKING.md tells operators who refork by command
  #   puma:      fork_worker 0 (no automatic refork); SIGURG to the master
  #   pitchfork: no refork_after; USR2 to the monitor
  module ReforkServers
    module_function

    # The command line for server +name+; the control socket path (Spindle) is
    # written to launch.dir/control.sock.
    def command(name, launch, workers:, threads:)
      case name
      when "spindle"
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", launch.thread_range, "-w", workers.to_s, "--lean-heap",
         "--control", "unix://#{control_path(launch)}", "-b", "tcp://#{launch.address}", "-q", launch.rackup]
      when "puma" then ["puma", "-C", launch.write("puma.rb", puma_config(launch, workers, threads)), launch.rackup]
      when "pitchfork"
        config = launch.write("pitchfork.rb", <<~RUBY)
          worker_processes #{workers}
          listen "#{launch.address}", backlog: 1024
        RUBY
        ["pitchfork", "-c", config, launch.rackup]
      end
    end

    def control_path(launch) = File.join(launch.dir, "control.sock")

    def puma_config(launch, workers, threads)
      <<~RUBY
        workers #{workers}
        threads #{threads}, #{threads}
        bind "tcp://#{launch.address}"
        fork_worker 0 # workers 1..N-1 forked from worker 0; 0: no automatic refork (SIGURG triggers one)
        quiet
      RUBY
    end

    def trigger(name, server, control)
      case name
      when "spindle" then Memory.control(control, "refork")
      when "puma" then Process.kill(:URG, server.pid)
      when "pitchfork" then Process.kill(:USR2, server.pid)
      end
    end
  end
end
