# frozen_string_literal: true

require "time"
require_relative "backoff"
require_relative "reaper"

module Spindle
  module Cluster
    # Long-running commands the server keeps alive beside its workers
    # (`sidecar "bin/jobs", name: "solid_queue"`, --sidecar CMD), as Puma's
    # solid_queue plugin keeps Solid Queue's supervisor: started once the
    # workers serve (#start), started again with a Backoff when one exits
    # (as a worker that fails to boot is), stopped with the server (#stop:
    # TERM, then KILL once --shutdown-timeout is over). A phased restart or a
    # refork leaves them alone: they run no app code of the server's.
    #
    # Each runs in a process group of its own, so a Ctrl-C or a signal to the
    # server's group reaches the server, which stops it in its turn, and not
    # the sidecar first (which would be restarted as if it had died). Its
    # stdout and stderr are the server's.
    #
    # The cluster's master ticks it on its loop and hands it the exits its
    # Reaper finds (#reaped); a process serving alone ticks it on a thread of
    # its own (SingleServices). Ports, so a test drives it without forking:
    #   spawn   ->(command) { pid }          starts the command
    #   signal  ->(pid, name) { ... }        sends it a signal
    #   wait    ->(pid) { [pid, status] or nil }  reaps it without blocking
    #   clock   -> { monotonic seconds }
    class Sidecars
      # A sidecar that ran this long before it died was not failing to
      # start: its next start waits Backoff::FIRST again.
      STABLE = 10.0

      # One command and what the server knows of its process.
      class Sidecar
        attr_reader :name, :command, :backoff
        attr_accessor :pid, :restarts, :started_at, :running_since, :start_at, :kill_at

        def initialize(name:, command:)
          @name = name
          @command = command
          @backoff = Backoff.new
          @restarts = -1 # the first start is not a restart
        end
      end

      def self.spawn_command(command)
        Process.spawn(command, pgroup: true, close_others: true)
      end

      def initialize(specs, log:, stop_timeout:, clock: -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) },
                     spawn: Sidecars.method(:spawn_command), signal: ->(pid, name) { Process.kill(name, pid) },
                     wait: ->(pid) { Process.wait2(pid, Process::WNOHANG) })
        @sidecars = specs.map { |spec| Sidecar.new(name: spec[:name], command: spec[:command]) }
        @log = log
        @stop_timeout = stop_timeout
        @clock = clock
        @spawn = spawn
        @signal = signal
        @wait = wait
        @started = false
        @stopping = false
      end

      def any? = @sidecars.any?
      def started? = @started
      def stopping? = @stopping

      # Once the workers serve (a hot restart's successor: once its own do).
      def start
        return if @started || @stopping

        @started = true
        @sidecars.each { |s| launch(s) }
      end

      # Every tick of the server's loop: exits, starts that are due, and
      # the KILL of a sidecar that outlived its stop.
      def tick
        now = @clock.call
        @sidecars.each do |s|
          reap(s)
          launch(s) if !@stopping && s.start_at && now >= s.start_at
          kill(s) if s.kill_at && now >= s.kill_at
        end
      end

      # An exit the master's Reaper found: true when pid was a sidecar's.
      def reaped(pid, status)
        sidecar = @sidecars.find { |s| s.pid == pid }
        return false unless sidecar

        exited(sidecar, status)
        true
      end

      # The server stops: TERM to each; KILL after stop_timeout (#tick).
      def stop
        return if @stopping

        @stopping = true
        deadline = @clock.call + @stop_timeout
        @sidecars.each do |s|
          s.start_at = nil
          next unless s.pid

          @log.info("spindle: stopping sidecar #{s.name} (pid #{s.pid}): TERM, KILL in #{@stop_timeout}s")
          deliver(s.pid, :TERM)
          s.kill_at = deadline
        end
      end

      # A forced stop: the server ends now, and its sidecars with it.
      def kill_all
        @stopping = true
        @sidecars.each { |s| kill(s) if s.pid }
      end

      # None runs.
      def done? = @sidecars.none?(&:pid)

      # For spindlectl stats: one entry per sidecar.
      def report
        @sidecars.map do |s|
          { "name" => s.name, "command" => s.command, "pid" => s.pid, "restarts" => [s.restarts, 0].max,
            "started_at" => s.started_at&.utc&.iso8601 }
        end
      end

      private

      def launch(sidecar)
        sidecar.start_at = nil
        sidecar.restarts += 1
        sidecar.pid = @spawn.call(sidecar.command)
        sidecar.started_at = Time.now
        sidecar.running_since = @clock.call
        @log.info("spindle: sidecar #{sidecar.name} started (pid #{sidecar.pid}): #{sidecar.command}")
      rescue SystemCallError => e
        sidecar.pid = nil
        retry_later(sidecar, "could not start: #{e.message}")
      end

      def reap(sidecar)
        return unless sidecar.pid

        pid, status = @wait.call(sidecar.pid)
        exited(sidecar, status) if pid
      rescue Errno::ECHILD
        sidecar.pid = nil # reaped elsewhere, its exit unknown
      end

      def exited(sidecar, status)
        how = Reaper.status(status)
        pid = sidecar.pid
        sidecar.pid = nil
        sidecar.kill_at = nil
        return @log.info("spindle: sidecar #{sidecar.name} stopped (pid #{pid}, #{how})") if @stopping

        sidecar.backoff.reset if @clock.call - sidecar.running_since >= STABLE
        retry_later(sidecar, "(pid #{pid}) died: #{how}")
      end

      def retry_later(sidecar, what)
        delay = sidecar.backoff.failed
        sidecar.start_at = @clock.call + delay
        @log.error("sidecar #{sidecar.name} #{what}; starting it again in #{delay}s")
      end

      # Its whole process group: a sidecar that must be killed cannot be
      # trusted to stop the processes it started either.
      def kill(sidecar)
        sidecar.kill_at = nil
        @log.error("sidecar #{sidecar.name} (pid #{sidecar.pid}) still running; killing its process group")
        deliver(-sidecar.pid, :KILL)
      end

      def deliver(pid, name)
        @signal.call(pid, name)
      rescue Errno::ESRCH
        nil # gone already; its exit is reaped
      end
    end
  end
end
