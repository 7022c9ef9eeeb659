# frozen_string_literal: true

require_relative "../process/server"
require_relative "../boot/app_loader"
require_relative "../process/phase"
require_relative "message"
require_relative "children"
require_relative "spawner"
require_relative "supervisor"
require_relative "reforker"
require_relative "renewal"
require_relative "shutdown"
require_relative "takeover"
require_relative "master_services"
require_relative "reaper"
require_relative "sidecars"
require_relative "../process/restart_file"
require_relative "../process/signal_queue"
require_relative "../log/reopen"
require_relative "subreaper"
require_relative "stats_report"
require_relative "container_sizing"

module Spindle
  module Cluster
    # The cluster's master: holds the listeners, forks and supervises workers,
    # and never serves a request. Signals come in as in every Spindle process
    # (SignalQueue: the trap only queues); control commands join the same
    # queue. The loop below is its one reader, and #dispatch is the master's
    # table: what each signal or command does. The rest is done by its parts,
    # each in its own file: Supervisor (the worker count, boots, timeouts),
    # Reforker (one refork), Reaper (who left), Renewal (rollouts: USR1, a
    # refork's older generation, memory), Shutdown (the stop, through the
    # Phase), Takeover (both roles of a hot restart), MasterServices
    # (control socket, metrics, pid file, systemd) and Sidecars (commands
    # kept running beside the workers). See docs/SIGNALS.md and
    # docs/REFORKING.md.
    class Master
      TICK = 0.5
      # Every one has a meaning in #dispatch; Signals::WORKER lists them all too.
      SIGNALS = %i[TERM INT QUIT USR1 USR2 TTIN TTOU HUP].freeze
      STOP_SIGNALS = %i[TERM INT QUIT].freeze

      attr_reader :children, :started_at, :reforker, :phase, :sidecars

      # app: an app already built (the rackup handler's); preloaded instead of
      # loading rackup a second time.
      def initialize(config, log, rackup, app: nil)
        @config = config
        @log = log
        @rackup = rackup
        @app = app
        @children = Children.new
        @phase = Phase.new
        @clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
      end

      # For StatsReport and the systemd notes.
      def desired = @supervisor.desired
      def restarts = @supervisor.restarts
      def generation = @reforker.generation
      def refork_failures = @reforker.failures

      def run
        boot
        tick until @shutdown.done? && @sidecars.done?
        last_stop_signal
        @log.info("spindle: master stopped")
        exit(1) if @takeover.gave_up?
      ensure
        @sidecars&.kill_all unless @sidecars&.done?
        @services&.close
        @server&.close_listeners(unlink: @takeover.owns_socket_files?)
        @services&.remove_pid_file
      end

      private

      def boot
        Subreaper.enable
        @log.become("master")
        @signals = SignalQueue.new.trap(SIGNALS)
        inherited = HotRestart.inherited_listeners
        roles
        @services.claim_pid_file(@takeover.parent)
        @sizing = ContainerSizing.start(@config, @log)
        @app ||= AppLoader.load(@rackup) if @config.preload
        CpuAffinity.base # --cpu-affinity=auto: drawn here, so each worker takes the next CPU from it
        @server = Server.new(@app, @config, @log, listeners: inherited || [])
        @server.bind unless inherited
        # A successor leaves the control socket to its parent until it takes
        # over: if it gives up, the parent must still answer spindlectl.
        @services.open_control unless @takeover.parent
        @spawner = Spawner.new(config: @config, log: @log, children: @children, listeners: @server.listeners,
                               closes_in_child: [@signals.reader],
                               siblings: Engine::SiblingShare.for_cluster(@config.workers))
        @spawner.app_source(@app, @rackup)
        @services.attach(@spawner)
        supervise
        @services.open_metrics(@takeover.parent)
        @started_at = Time.now
        Process.setproctitle("spindle master")
        @log.announce(@server.startup_line)
      end

      # The side services, the hot restart's roles and the stop. Only the
      # master in charge speaks to systemd (Takeover#in_charge?).
      def roles
        @services = MasterServices.new(config: @config, log: @log, queue: @signals, clock: @clock,
                                       in_charge: -> { @takeover.in_charge? })
        @takeover = Takeover.new(phase: @phase, services: @services, log: @log, stop: ->(how) { @shutdown.stop(how) })
        @shutdown = Shutdown.new(phase: @phase, children: @children, config: @config, log: @log, clock: @clock,
                                 notes: @services.notes, kill: method(:kill), stop_listening: method(:stop_listening),
                                 forced_end: method(:forced_end))
      end

      # Supervision, reforks and rollouts act on the children through the
      # spawner and signals; they read the time through the master's clock.
      def supervise
        @supervisor = Supervisor.new(children: @children, spawner: @spawner, signal: method(:signal_child),
                                     config: @config, log: @log, clock: @clock,
                                     on_boot_failure: @takeover.method(:boot_failed))
        @reforker = Reforker.new(children: @children, supervisor: @supervisor, config: @config, log: @log,
                                 clock: @clock)
        @sidecars = Sidecars.new(@config.sidecars, log: @log, stop_timeout: @config.shutdown_timeout, clock: @clock)
        @phase.on_change { |name| @sidecars.stop if name == :draining }
        @restart_file = RestartFile.for(@config, clock: @clock)
        @reaper = Reaper.new(children: @children, supervisor: @supervisor, reforker: @reforker, takeover: @takeover,
                             phase: @phase, config: @config, log: @log, others: @sidecars.method(:reaped))
        @renewal = Renewal.new(children: @children, supervisor: @supervisor, reforker: @reforker, phase: @phase,
                               config: @config, log: @log, clock: @clock, notes: @services.notes)
      end

      def tick
        ready, = IO.select([@signals.reader, *@children.channels], nil, nil,
                           @shutdown.wait_limit(@services.notes.tick_limit(TICK)))
        ready&.each { |io| read_messages(io) unless io == @signals.reader }
        @signals.drain.each { |item| dispatch(item) }
        @sidecars.tick
        @reaper.reap
        @supervisor.check_timeouts
        @renewal.tick
        @sizing.check(@children.active, desired)
        @shutdown.tick
        @services.tick
        restart_from_file if @restart_file&.changed? && @phase.serving?
        refork if @phase.serving? && @reforker.due?
        @supervisor.refill(held: @reforker.held_slots) unless @phase.draining?
        @services.notes.tick(@children, desired, generation, stopping: @phase.stopping?)
      end

      # A second stop signal to the whole group (Ctrl-C twice) reaches the
      # workers too, and they exit at once: the master may reap the last one
      # in the tick that queued the signal, and find itself done before it
      # read it. It is still the operator's forced stop, and ends with status 1.
      def last_stop_signal
        return unless @signals.drain.any? { |item| STOP_SIGNALS.include?(item) }

        @shutdown.signal(:TERM)
        @shutdown.tick
      end

      def dispatch(item)
        case item
        when :TERM, :INT then @shutdown.signal(:TERM)
        when :QUIT then @takeover.quit ? @shutdown.stop(:QUIT) : @shutdown.signal(:QUIT)
        when :USR1 then @renewal.phased_restart
        when :USR2 then hot_restart
        when :TTIN, :TTOU, :REFORK then command(item)
        when :HUP then reopen
        when :GC then run_gc
        when Array then answer(*item)
        end
      end

      # HUP (logrotate's postrotate): this process's Reopen actions, then the
      # same in every worker and the mold, which take HUP as their own
      # (Signals::WORKER). Each process opens the files afresh itself: a
      # descriptor the master reopened is not the one its children hold.
      def reopen
        failed = Reopen.run(@log)
        @log.info("spindle: HUP: log files reopened#{failed.empty? ? '' : "; failed: #{failed.join(', ')}"}; " \
                  "telling #{@children.count(&:pid)} child process(es)")
        @children.each { |c| kill(c, :HUP) }
      end

      def run_gc = @children.workers.each { |c| Message.send_to(c.channel, Message::RunGC.new(reason: "spindlectl")) }

      # A command that wants a reply: [:stats, reply] from the control
      # endpoint, [:metrics, reply] from the metrics endpoint, and the
      # commands that may be refused ([:TTOU, reply]: {} when done, or the
      # refusal as an error).
      def answer(asked, reply)
        reply << case asked
                 when :stats then StatsReport.new(self, @config).to_h
                 when :metrics then StatsReport.new(self, @config).to_h(durations: true)
                 when :TTIN, :TTOU, :REFORK then command(asked)&.then { |why| { "error" => why } } || {}
                 else { "error" => "unknown" }
                 end
      end

      # A signal, or its spindlectl command: nil when done, or why not (also
      # logged, for the one who sent the signal).
      def command(name)
        refusal = case name
                  when :TTIN then @supervisor.grow
                  when :TTOU then @supervisor.shrink
                  when :REFORK then refork
                  end
        @log.info("spindle: #{refusal}") if refusal
        refusal
      end

      # A rackup master without /proc has no command line to rerun (RackupRestart).
      def hot_restart
        return @takeover.start(@server.listeners) if HotRestart.command?

        @log.info("spindle: hot restart ignored: no command line to rerun (rackup without /proc)")
      end

      # --restart-file changed (bin/rails restart): new code, as USR2 brings
      # it, when this master can rerun its command line; a phased restart
      # otherwise.
      def restart_from_file
        how = HotRestart.command? ? :USR2 : :USR1
        @log.info("spindle: #{@restart_file.path} changed: " \
                  "#{how == :USR2 ? 'hot restart (as USR2)' : 'phased restart (as USR1)'}")
        dispatch(how)
      end

      # The busiest worker of the current generation becomes the mold
      # (Reforker); capacity is one worker short until the new generation
      # serves. nil, or why not.
      def refork
        return "refork ignored: #{@renewal.reason} in progress" if @renewal.reason
        return "refork ignored: the master is stopping" if @phase.stopping?

        @reforker.start
      end

      # --- messages -----------------------------------------------------------

      def read_messages(io)
        child = @children.by_channel(io)
        loop do
          message = Message.receive_nonblock(io)
          return if message == :wait
          return child && @supervisor.channel_closed(child) if message.nil?

          handle(child, message)
        end
      end

      def handle(child, message)
        case message
        when Message::Checkin
          child.last_checkin = @clock.call
          child.checkin = message
        when Message::Forked then child.pid ||= message.pid
        when Message::Booted then booted(child, message)
        when Message::MoldReady then @reforker.mold_ready(child, message, stopping: @phase.draining?)
        when Message::Dumped then @supervisor.dumped(child)
        end
      end

      # The Supervisor counts it. One that boots during the drain delay is
      # told to leave the pool too; during a stop it reads its order already.
      def booted(child, message)
        return unless @supervisor.booted(child, message.pid) && !@phase.draining?

        Message.send_to(child.channel, Message::LeavePool.new(delay: @config.drain_delay)) if @phase.name == :leaving
        return unless @children.active.count(&:serving?) >= desired

        @takeover.serving(desired)
        @sidecars.start
      end

      # --- processes ----------------------------------------------------------

      def kill(child, signal)
        Process.kill(signal, child.pid) if child.pid
      rescue Errno::ESRCH
        nil
      end

      # The Supervisor's and the Reforker's port: TERM, their "drain and go",
      # is the worker's order to stop (Shutdown#order); other signals go as they are.
      def signal_child(child, name)
        name == :TERM ? @shutdown.order(child, :timed) : kill(child, name)
      end

      # Clients that connect from now on are refused, which a load balancer
      # retries elsewhere, rather than queued in a backlog that no worker
      # accepts and the kernel resets at exit (Listener#stop_listening). Not
      # when a successor took over (it serves these sockets) or while one
      # starts or gives up: the listeners are this master's alone only then.
      def stop_listening
        @server.stop_listening if @takeover.owns_socket_files?
      end

      # The forced stop's end (Shutdown): every child was killed; nothing
      # else is waited for.
      def forced_end
        @sidecars.kill_all
        @server.close_listeners(unlink: @takeover.owns_socket_files?)
        @services.remove_pid_file
        exit!(1)
      end
    end
  end
end
