# frozen_string_literal: true

require "rbconfig"
require_relative "memory"
require_relative "versions"
require_relative "jemalloc"

module Bench
  # How the refork scenarios start each server, make it refork, tell its
  # processes apart and see its new generation complete, in one place so that
  # refork, refork-rps and refork-generations measure exactly the same setups.
  #   spindle:   cluster with a control socket; `spindlectl refork`; --lean-heap
  #              and --no-preload, as docs/REFORKING.md tells operators who refork
  #   puma:      fork_worker 0 (no automatic refork); SIGURG to the master
  #   pitchfork: no refork_after; USR2 to the monitor
  module ReforkServers
    SPINDLE = { runtime: :spindle, version: -> { Versions.spindle }, refork: "bin/spindlectl refork (control socket)" }.freeze
    SERVERS = {
      "spindle" => SPINDLE, # the threads engine
      "puma" => { runtime: :peers, version: -> { "#{Versions.gem('puma')} (fork_worker)" },
                  refork: "SIGURG to the master (= pumactl refork)" },
      "pitchfork" => { runtime: :peers, version: -> { Versions.gem("pitchfork") }, refork: "SIGUSR2 to the monitor" },
      # Puma on Spindle's default allocator: the ratio without the allocator's share.
      "puma-jemalloc" => { runtime: :peers, version: -> { "#{Versions.gem('puma')} (fork_worker, #{Jemalloc::SETTINGS})" },
                           refork: "SIGURG to the master (= pumactl refork)" }
    }.freeze
    # The same Spindle setup on its other engines, for a scenario that asks.
    ENGINES = { "spindle-blocking" => SPINDLE, "spindle-fibers" => SPINDLE }.freeze
    ALL = SERVERS.merge(ENGINES).freeze
    PEER_WORKER = /cluster worker (\d+)|worker\[(\d+)\]/

    module_function

    def spindle?(name) = name.start_with?("spindle")

    # The peer a variant runs: "puma" for "puma-jemalloc".
    def peer(name) = name.delete_suffix("-jemalloc")

    def engine(name) = name[/\Aspindle-(\w+)\z/, 1] || "threads"

    def servers_record(names)
      names.map do |n|
        { name: n, family: spindle?(n) ? "spindle" : "peer", version: Versions.safely(ALL[n][:version]),
          refork: ALL[n][:refork], engine: (engine(n) if spindle?(n)) }.compact
      end
    end

    # Starts server +name+ with +workers+ workers; Spindle's control socket
    # is launch.dir/control.sock.
    def start(name, scenario_name, target, workers:, threads:, **options)
      Memory.start(name: "#{scenario_name}-#{name}", runtime: ALL[name][:runtime], target: target,
                   processes: workers, threads: threads, **options) { |l| command(name, l, workers: workers) }
    end

    def command(name, launch, workers:)
      return spindle_command(name, launch, workers) if spindle?(name)

      case name
      when "puma" then ["puma", "-C", launch.write("puma.rb", puma_config(launch, workers)), launch.rackup]
      when "puma-jemalloc" then [*Jemalloc.env, *command("puma", launch, workers: workers)]
      when "pitchfork"
        ["pitchfork", "-c", launch.write("pitchfork.rb", <<~RUBY), launch.rackup]
          worker_processes #{workers}
          listen "#{launch.address}", backlog: 1024
        RUBY
      end
    end

    def spindle_command(name, launch, workers)
      [RbConfig.ruby, "bin/spindle", "--engine", engine(name), "-t", launch.thread_range, "-w", workers.to_s, "--lean-heap", "--no-preload",
       "--control", "unix://#{control(launch)}", "-b", "tcp://#{launch.address}", "-q", launch.rackup]
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
      return Memory.control(control(server.launch), "refork") if spindle?(name)

      case peer(name)
      when "puma" then Process.kill(:URG, server.pid)
      when "pitchfork" then Process.kill(:USR2, server.pid)
      end
    end

    # Every process of the server with its role (master, worker, mold,
    # other) and generation; Spindle's from its stats, the peers' from
    # their process titles.
    def processes(name, server)
      return spindle_processes(server) if spindle?(name)

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
      return ws.all? { |w| w[:generation].to_i >= 1 } && (ws.map { |w| w[:pid] } & old_pids).empty? if spindle?(name)

      case peer(name)
      when "puma" then (ws.map { |w| w[:pid] } & old_pids).size <= 1
      when "pitchfork" then ws.all? { |w| w[:generation].to_i >= 1 }
      end
    end
  end
end
