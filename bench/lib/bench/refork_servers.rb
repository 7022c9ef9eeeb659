# frozen_string_literal: true

require "rbconfig"
require_relative "memory"
require_relative "versions"

module Bench
  # How the refork scenarios start each server, make it refork, tell its
  # processes apart and see its new generation complete, in one place so that
  # refork, refork-rps and refork-generations measure exactly the same setups.
  #   spindle:   cluster with a control socket; `spindlectl refork`; --lean-heap
  #              and --no-preload, as docs/REFORKING.md tells operators who refork
  #   puma:      fork_worker 0 (no automatic refork); SIGURG to the master
  #   pitchfork: no refork_after; USR2 to the monitor
  module ReforkServers
    SERVERS = {
      "spindle" => { runtime: :spindle, version: -> { Versions.spindle }, refork: "bin/spindlectl refork (control socket)" },
      "puma" => { runtime: :peers, version: -> { "#{Versions.gem('puma')} (fork_worker)" },
                  refork: "SIGURG to the master (= pumactl refork)" },
      "pitchfork" => { runtime: :peers, version: -> { Versions.gem("pitchfork") }, refork: "SIGUSR2 to the monitor" }
    }.freeze
    PEER_WORKER = /cluster worker (\d+)|worker\[(\d+)\]/

    module_function

    def servers_record(names)
      names.map do |n|
        { name: n, family: n == "spindle" ? "spindle" : "peer", version: Versions.safely(SERVERS[n][:version]),
          refork: SERVERS[n][:refork] }
      end
    end

    # Starts server +name+ with +workers+ workers; Spindle's control socket
    # is launch.dir/control.sock.
    def start(name, scenario_name, target, workers:, threads:, **options)
      Memory.start(name: "#{scenario_name}-#{name}", runtime: SERVERS[name][:runtime], target: target,
                   processes: workers, threads: threads, **options) { |l| command(name, l, workers: workers) }
    end

    def command(name, launch, workers:)
      case name
      when "spindle"
        [RbConfig.ruby, "bin/spindle", "--engine", "threads", "-t", launch.thread_range, "-w", workers.to_s, "--lean-heap", "--no-preload",
         "--control", "unix://#{control(launch)}", "-b", "tcp://#{launch.address}", "-q", launch.rackup]
      when "puma" then ["puma", "-C", launch.write("puma.rb", puma_config(launch, workers)), launch.rackup]
      when "pitchfork"
        ["pitchfork", "-c", launch.write("pitchfork.rb", <<~RUBY), launch.rackup]
          worker_processes #{workers}
          listen "#{launch.address}", backlog: 1024
        RUBY
      end
    end

    def control(launch) = File.join(launch.dir, "control.sock")

    def puma_config(launch, workers)
      <<~RUBY
        workers #{workers}
        threads #{launch.threads}, #{launch.threads}
        bind "tcp://#{launch.address}"
        fork_worker 0 # workers 1..N-1 forked from worker 0; 0: no automatic refork (SIGURG triggers one)
        quiet
      RUBY
    end

    def trigger(name, server)
      case name
      when "spindle" then Memory.control(control(server.launch), "refork")
      when "puma" then Process.kill(:URG, server.pid)
      when "pitchfork" then Process.kill(:USR2, server.pid)
      end
    end

    # Every process of the server with its role (master, worker, mold,
    # other) and generation; Spindle's from its stats, the peers' from
    # their process titles.
    def processes(name, server)
      return spindle_processes(server) if name == "spindle"

      Memory.tree(server.pid).map do |p|
        role = if p[:pid] == server.pid then "master"
               elsif p[:cmd].match?(PEER_WORKER) then "worker"
               elsif p[:cmd].include?("mold") then "mold"
               else "other"
               end
        index = p[:cmd][PEER_WORKER] && (Regexp.last_match(1) || Regexp.last_match(2)).to_i
        p.merge(role: role, generation: p[:cmd][/gen:(\d+)/, 1]&.to_i, index: index)
      end
    end

    def spindle_processes(server)
      stats = Memory.control(control(server.launch), "stats")
      roles = { stats["master"]["pid"] => ["master", stats["master"]["generation"]] }
      stats["workers"].each { |w| roles[w["pid"]] = [w["state"] == "mold" ? "mold" : "worker", w["generation"], w["state"]] if w["pid"] }
      mold = stats["mold"]
      roles[mold["pid"]] = ["mold", mold["generation"]] if mold.is_a?(Hash) && mold["pid"]
      Memory.tree(server.pid).map do |p|
        role, generation, state = roles[p[:pid]] || ["other", nil]
        p.merge(role: role, generation: generation, state: state)
      end
    end

    # The workers that serve (a Spindle worker still booting does not).
    def workers(name, server)
      processes(name, server).select { |p| p[:role] == "worker" && [nil, "serving"].include?(p[:state]) }
    end

    # The new generation is complete: +count+ workers, the old ones gone
    # (Puma keeps worker 0: it is the template the others fork from).
    def generation_complete?(name, server, old_pids, count)
      ws = workers(name, server)
      return false unless ws.size == count

      case name
      when "spindle" then ws.all? { |w| w[:generation].to_i >= 1 } && (ws.map { |w| w[:pid] } & old_pids).empty?
      when "puma" then (ws.map { |w| w[:pid] } & old_pids).size <= 1
      when "pitchfork" then ws.all? { |w| w[:generation].to_i >= 1 }
      end
    end
  end
end
