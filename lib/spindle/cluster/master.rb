# frozen_string_literal: true

require "socket"
require_relative "../server"
require_relative "../app_loader"
require_relative "../process_stats"
require_relative "message"
require_relative "children"
require_relative "spawner"
require_relative "rollout"
require_relative "supervisor"
require_relative "reforker"
require_relative "../signal_queue"
require_relative "../log/reopen"
require_relative "subreaper"
require_relative "hot_restart"
require_relative "stats_report"
require_relative "container_sizing"
require_relative "control_server"
require_relative "../metrics/endpoint"
require_relative "../metrics/cluster_source"
require_relative "../pid_file"
require_relative "../systemd/cluster_notes"

module Spindle
  module Cluster
    # The cluster's master: holds the listeners, forks and supervises workers,
    # and never serves a request. Signals come in as in every Spindle process
    # (SignalQueue: the trap only queues); control commands join the same
    # queue. The loop below is its one reader, and #dispatch is the master's
    # table: what each signal or command does. See docs/SIGNALS.md and
    # docs/REFORKING.md.
    class Master
      TICK = 0.5
      MEMORY_CHECK_EVERY = 5.0
      METRICS_RETRY = 1.0 # seconds between tries for the metrics address the previous master holds
      # A forced stop waits this long for workers to log what they cut off.
      FORCE_GRACE = 2.0
      # Every one has a meaning in #dispatch; Signals::WORKER lists them all too.
      SIGNALS = %i[TERM INT QUIT USR1 USR2 TTIN TTOU HUP].freeze

      attr_reader :children, :started_at, :reforker

      # app: an app already built (the rackup handler's); preloaded instead of
      # loading rackup a second time.
      def initialize(config, log, rackup, app: nil)
        @config = config
        @log = log
        @rackup = rackup
        @app = app
        @children = Children.new
        @next_memory_check = 0
        @rollout = nil
        @stopping = nil
        @leaving = nil # [how, when the delay ends] during the drain delay
        @successor = nil # the new master a USR2 started, until it takes over or dies
        @handed_over = false # a new master took over; this one drains
        @gave_up = false
        @metrics_retry_at = nil # while a new master waits for the previous one's metrics address
      end

      # For StatsReport and the systemd notes.
      def desired = @supervisor.desired
      def restarts = @supervisor.restarts
      def generation = @reforker.generation
      def refork_failures = @reforker.failures

      def run
        boot
        tick until @stopping && @children.none?
        @log.info("spindle: master stopped")
        exit(1) if @gave_up
      ensure
        @control&.close
        @metrics&.close
        @server&.close_listeners(unlink: owns_socket_files?)
        @pid_file&.remove
      end

      private

      def boot
        Subreaper.enable
        @log.become("master")
        @signals = SignalQueue.new.trap(SIGNALS)
        inherited = HotRestart.inherited_listeners
        @parent_master = HotRestart.parent
        @notes = Systemd::ClusterNotes.from_env(@log)
        claim_pid_file
        @sizing = ContainerSizing.start(@config, @log)
        @app ||= AppLoader.load(@rackup) if @config.preload
        CpuAffinity.base # --cpu-affinity=auto: drawn here, so each worker takes the next CPU from it
        @server = Server.new(@app, @config, @log, listeners: inherited || [])
        @server.bind unless inherited
        # A new master leaves the control socket to the old one until it takes
        # over: if it gives up, the old master must still answer spindlectl.
        open_control unless @parent_master
        @spawner = Spawner.new(config: @config, log: @log, children: @children, listeners: @server.listeners,
                               closes_in_child: [@signals.reader, @control&.io].compact,
                               siblings: Engine::SiblingShare.for_cluster(@config.workers))
        @spawner.app_source(@app, @rackup)
        supervise
        open_metrics
        @started_at = Time.now
        Process.setproctitle("spindle master")
        @log.announce(@server.startup_line)
      end

      # Supervision and reforks act on the children through the spawner and
      # signals; they read the time through the clock given here.
      def supervise
        clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
        @supervisor = Supervisor.new(children: @children, spawner: @spawner, signal: method(:signal_child),
                                     config: @config, log: @log, clock: clock, on_boot_failure: method(:boot_failed))
        @reforker = Reforker.new(children: @children, supervisor: @supervisor, config: @config, log: @log,
                                 clock: clock)
      end

      # A new master writes the pid file once it takes over; until then it
      # names the predecessor, which is alive and allowed to be.
      def claim_pid_file
        @pid_file = PidFile.for(@config, @log)
        @pid_file&.check!(predecessor: @parent_master)
        @pid_file&.write unless @parent_master
      end

      def tick
        ready, = IO.select([@signals.reader, *@children.channels], nil, nil, @notes.tick_limit(TICK))
        ready&.each { |io| read_messages(io) unless io == @signals.reader }
        @signals.drain.each { |item| dispatch(item) }
        reap
        @supervisor.check_timeouts
        check_refork
        recycle_fat_workers
        @sizing.check(@children.active, desired)
        advance_rollout
        end_drain_delay
        retry_metrics if @metrics_retry_at
        refork if !@stopping && !@leaving && @reforker.due?
        @supervisor.refill(held: @reforker.held_slots) unless @stopping
        @notes.tick(@children, desired, generation, stopping: @stopping || @leaving) if in_charge?
      end

      # The master systemd and the pid file know: not a new one before it
      # takes over, nor an old one that handed over or stops.
      def in_charge? = !@parent_master && !@handed_over && !@gave_up

      def open_control
        @control = ControlServer.open(@config, @signals) if @config.control
      end

      # A new master cannot have the address while the master that started it
      # still serves on it: it tries each METRICS_RETRY until that one lets
      # go (#quit, once this one serves). The listener is opened on this
      # thread, so every worker forked after it knows to close it.
      def open_metrics
        return unless @config.metrics

        @metrics = Metrics::Endpoint.new(@config.metrics, source: Metrics::ClusterSource.new(@signals))
        return start_metrics unless @parent_master

        @metrics_retry_at = 0
        @log.info("spindle: metrics at #{@config.metrics} once the previous master (pid #{@parent_master}) lets it go")
      end

      def start_metrics
        @metrics.start
        @spawner.close_in_child(@metrics.io)
        @log.info("spindle: metrics at #{@metrics.uri} (GET /metrics)")
      end

      def retry_metrics
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if now < @metrics_retry_at

        start_metrics
        @metrics_retry_at = nil
      rescue Listener::Error
        @metrics_retry_at = now + METRICS_RETRY
      end

      def dispatch(item)
        case item
        when :TERM, :INT then leave_pool(:TERM)
        when :QUIT then quit
        when :USR1 then start_rollout(@children.active.dup, "phased restart", reload: true)
        when :USR2 then hot_restart
        when :TTIN, :TTOU, :REFORK then command(item)
        when :HUP then reopen
        when :GC then @children.workers.each { |c| Message.send_to(c.channel, Message::RunGC.new(reason: "spindlectl")) }
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

      # --- messages -----------------------------------------------------------

      def read_messages(io)
        child = @children.by_channel(io)
        loop do
          message = Message.receive_nonblock(io)
          return if message == :wait
          return channel_closed(child) if message.nil?

          handle(child, message)
        end
      end

      def handle(child, message)
        case message
        when Message::Checkin
          child.last_checkin = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          child.checkin = message
        when Message::Forked then child.pid ||= message.pid
        when Message::Booted then booted(child, message)
        when Message::MoldReady then @reforker.mold_ready(child, message)
        when Message::Dumped then @supervisor.dumped(child)
        end
      end

      # A worker dismissed before it booted (a rollout or a failed refork let
      # it go) is told to drain now; one condemned meanwhile (too slow to
      # boot) has its KILL coming.
      def booted(child, message)
        child.pid = message.pid
        child.booted_at = Time.now
        child.last_checkin = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return order_stop(child, :timed) if child.state == :retiring
        return if child.state == :killed

        child.state = :serving
        @supervisor.booted
        @log.info("spindle: worker #{child.index} added (pid #{child.pid}, generation #{child.generation}); " \
                  "#{@children.count(&:serving?)} serving")
        return if @stopping # #stop ordered it already: it reads the order now

        Message.send_to(child.channel, Message::LeavePool.new(delay: @config.drain_delay)) if @leaving

        tell_parent_to_drain if @parent_master && @children.active.count(&:serving?) >= desired
      end

      # A worker that died before it booted has no pid to reap by: its closed
      # channel is all that is left of it. Any other child is reaped by pid.
      def channel_closed(child)
        return unless child

        if child.pid
          child.channel_closed = true
        else
          @supervisor.boot_failed(child)
          @children.remove(child)
        end
      end

      # --- processes ----------------------------------------------------------

      def reap
        loop do
          pid, status = Process.wait2(-1, Process::WNOHANG)
          return unless pid
          next successor_exited(status) if pid == @successor

          child = @children.by_pid(pid)
          next unless child

          @supervisor.boot_failed(child) if child.booting?
          log_exit(child, pid, status)
          @children.remove(child)
          @reforker.exited(child, exit_status(status)) unless @stopping
        end
      rescue Errno::ECHILD
        nil
      end

      # Every child that leaves is logged, with its exit status: an
      # unexpected exit as an error, and a mold's with what its loss means.
      def log_exit(child, pid, status)
        return @log.info("spindle: #{child_name(child)} removed (pid #{pid}, #{exit_status(status)})") if
          expected_exit?(child)

        @log.error("#{child_name(child)} (pid #{pid}) died: #{exit_status(status)}#{mold_lost(child)}")
      end

      def child_name(child)
        case child.state
        when :mold_pending then "worker #{child.index} (becoming the mold of generation #{@reforker.target})"
        when :mold_trial then "mold (generation #{child.generation}, its first worker not serving yet)"
        when :mold, :mold_retiring then "mold (generation #{child.generation})"
        else "worker #{child.index}"
        end
      end

      def exit_status(status)
        status.signaled? ? "killed by signal #{Signal.signame(status.termsig)}" : "exit status #{status.exitstatus}"
      end

      # A mold leaves when a newer one replaces it, or when everything stops.
      def expected_exit?(child)
        @stopping || %i[retiring killed mold_retiring].include?(child.state)
      end

      # What an unexpected exit cost, for the log line.
      def mold_lost(child)
        case child.state
        when :mold_pending, :mold_trial
          "; refork to generation #{@reforker.target} failed; the other workers keep serving, and " \
            "#{@config.refork_after ? 'automatic reforks wait until one succeeds' : 'the next refork starts afresh'}"
        when :mold then "; until the next refork, new workers start from the master"
        end
      end

      # A new master whose worker cannot boot gives up at once: the old
      # master still serves the old code, and waiting would only leave a
      # second master holding the port with no worker.
      def boot_failed(child)
        give_up_takeover("worker #{child.index} failed to boot") if @parent_master && !@gave_up
      end

      def recycle_fat_workers
        limit = @config.worker_memory_limit
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return unless limit && !@rollout && !@reforker.busy? && now >= @next_memory_check

        @next_memory_check = now + MEMORY_CHECK_EVERY
        fat = @children.active.find { |c| c.serving? && ProcessStats.memory(c.pid)&.fetch(:uss).to_i > limit * 1024 * 1024 }
        start_rollout([fat], "worker #{fat.index} over #{limit} MiB") if fat
      end

      def kill(child, signal)
        Process.kill(signal, child.pid) if child.pid
      rescue Errno::ESRCH
        nil
      end

      # --- rollouts, reforks, restarts -----------------------------------------

      # reload: an operator's reload (USR1), which systemd hears of.
      def start_rollout(old, reason, reload: false)
        return @log.info("spindle: #{reason} waits: #{@rollout.reason} in progress") if @rollout
        return @log.info("spindle: #{reason} waits: the refork to generation #{@reforker.target} is under way") if
          @reforker.busy?

        @log.info("spindle: #{reason}: replacing #{old.size} worker(s) one at a time")
        @rollout = Rollout.new(old, reason)
        @reloading = reload
        @notes.reloading("#{reason}: replacing #{old.size} worker(s)") if reload && in_charge?
      end

      def advance_rollout
        return unless @rollout && !@stopping

        outcome = @rollout.advance(spawn: ->(index) { @supervisor.spawn(index) },
                                   retire: ->(child) { @supervisor.dismiss(child) })
        return if outcome == :running

        said = if outcome == :done
                 "#{@rollout.reason} done"
               else
                 "#{@rollout.reason} failed: #{outcome}; the old workers keep serving"
               end
        outcome == :done ? @log.info("spindle: #{said}") : @log.error(said)
        @notes.reloaded(said) if @reloading && in_charge?
        @rollout = nil
      end

      # The busiest worker of the current generation becomes the mold
      # (Reforker); capacity is one worker short until the new generation
      # serves. nil, or why not.
      def refork
        return "refork ignored: #{@rollout.reason} in progress" if @rollout
        return "refork ignored: the master is stopping" if @stopping || @leaving

        @reforker.start
      end

      # Once the new generation's first worker serves, the older workers are
      # replaced one at a time; "done" once they all are.
      def check_refork
        return if @stopping || @reforker.check != :proved

        @log.info("spindle: refork to generation #{generation}: its first worker serves")
        start_rollout(@children.active.select { |c| c.generation < generation }, "refork to generation #{generation}")
      end

      # --- hot restart ----------------------------------------------------------

      # One new master at a time: a second one would serve the same port
      # beside the first, each with its own workers.
      def hot_restart
        refusal = if @stopping || @leaving then "this master is stopping"
                  elsif @successor then "new master pid #{@successor} is starting"
                  elsif @parent_master then "this master has not taken over yet"
                  end
        return @log.info("spindle: hot restart ignored: #{refusal}") if refusal

        @successor = HotRestart.start(@server.listeners)
        @log.info("spindle: hot restart: started new master pid #{@successor}; " \
                  "it takes over once its workers serve")
        @notes.reloading("hot restart: new master pid #{@successor} starting")
      end

      # QUIT from the new master says it serves: the old workers drain at
      # once, with no drain delay (the new workers answer on the same sockets,
      # so a 503 from the old ones would only confuse the health checks).
      # From anyone else it is a drain. The new master waits for the metrics
      # address: it is let go now.
      def quit
        return leave_pool(:QUIT) unless @successor

        @log.info("spindle: hot restart: new master pid #{@successor} takes over the listeners")
        @metrics&.close
        @handed_over = true
        stop(:QUIT)
      end

      # --drain-delay: TERM/INT/QUIT first tell the workers to answer health
      # checks with 503 while still serving; the stop itself (#stop) follows
      # once the delay is over. A second stop signal during the delay stops
      # at once, as during a drain.
      def leave_pool(how)
        delay = @config.drain_delay
        return stop_at_once if @leaving
        return stop(how) if @stopping || !delay.positive?

        @leaving = [how, Process.clock_gettime(Process::CLOCK_MONOTONIC) + delay]
        @notes.stopping("drain delay, then #{how == :QUIT ? 'drain' : 'graceful'}") if in_charge?
        @log.info("spindle: drain delay: health checks answer 503, workers still serve for #{delay}s, " \
                  "then #{how == :QUIT ? 'drain' : 'stop gracefully'}; signal again to stop at once")
        @children.select(&:serving?).each { |c| Message.send_to(c.channel, Message::LeavePool.new(delay: delay)) }
      end

      def end_drain_delay
        return unless @leaving && !@stopping && Process.clock_gettime(Process::CLOCK_MONOTONIC) >= @leaving.last

        stop(@leaving.first)
      end

      def successor_exited(status)
        if @stopping
          @log.error("new master pid #{@successor} exited: #{status}")
        else
          @log.error("hot restart failed: new master pid #{@successor} exited (#{status}) before it served; " \
                     "this master keeps serving")
          @notes.reloaded("hot restart failed: new master exited before it served; the previous master serves")
        end
        @successor = nil
      end

      # A new master owns the socket files once it has taken over; until then
      # they are the old master's. A master that hands over leaves them too.
      def owns_socket_files? = !@parent_master && !@gave_up && !@successor

      # systemd hears MAINPID= before the old master is told to go: the main
      # process exiting first would read as the service dying.
      def tell_parent_to_drain
        parent = @parent_master
        @parent_master = nil
        take_over_control
        take_over_pid_file
        @notes.took_over(desired)
        Process.kill(:QUIT, parent)
        @log.info("spindle: serving; told the previous master (pid #{parent}) to drain")
      rescue Errno::ESRCH
        nil
      end

      # The control socket moves to this master now; failing to open it must
      # not stop a master whose workers already serve.
      def take_over_control
        open_control
        @spawner.close_in_child(@control.io) if @control
      rescue StandardError => e
        @log.error("control endpoint not opened: #{e.message}")
      end

      # A master whose workers serve keeps serving without its pid file.
      def take_over_pid_file
        @pid_file&.write
      rescue PidFile::Error => e
        @log.error(e.message)
      end

      def give_up_takeover(why)
        @log.error("hot restart: #{why}; this new master gives up and exits, " \
                   "the previous master (pid #{@parent_master}) keeps serving")
        @gave_up = true
        stop(:TERM)
      end

      # TERM/INT: workers drain within shutdown_timeout. QUIT: no limit. A
      # second stop signal (also one during the drain delay) stops everything
      # at once (#stop_at_once). A child still booting reads its order once
      # it serves. Then the listeners stop listening (#stop_listening), and
      # only then says the log line so: from it on, connections are refused.
      def stop(how)
        stop_at_once if @stopping
        @stopping = how
        @notes.stopping(how == :QUIT ? "drain" : "graceful") if in_charge?
        @children.each { |c| order_stop(c, how == :QUIT ? :unlimited : :timed) }
        stop_listening
        @log.info("spindle: stopping (#{how == :QUIT ? 'drain' : 'graceful'}): #{@children.count(&:pid)} " \
                  "child process(es) told; signal again to stop at once")
      end

      # The second stop signal. Each worker is ordered to stop at once: it
      # logs the requests it cuts off and exits. Whatever is still there
      # after FORCE_GRACE (a worker that never read its channel, a stuck one)
      # is killed.
      def stop_at_once
        @stopping ||= :TERM # what exits from now on is expected (#log_exit)
        alive = @children.select(&:pid)
        @log.error("second stop signal: stopping #{alive.size} child process(es) at once")
        @children.each { |c| order_stop(c, :now) }
        wait_for_children(FORCE_GRACE)
        @children.each { |c| kill(c, :KILL) }
        @server.close_listeners(unlink: owns_socket_files?)
        @pid_file&.remove
        exit!(1)
      end

      # The Supervisor's and the Reforker's port: TERM, their "drain and go",
      # is the worker's order to stop (#order_stop); other signals go as they are.
      def signal_child(child, name)
        name == :TERM ? order_stop(child, :timed) : kill(child, name)
      end

      # how: :timed, :unlimited or :now (Message::Stop). A worker (also one
      # draining to become the mold) is told over its channel, never by a
      # signal: a signal sent to the whole process group (Ctrl-C, systemd
      # without KillMode=mixed) reached it already, and a second signal
      # means "exit at once" to it (Signals). A mold serves nothing: TERM
      # ends it at once (a retiring one no longer reads its channel).
      def order_stop(child, how)
        return kill(child, :TERM) if child.mold? && child.state != :mold_pending

        Message.send_to(child.channel, Message::Stop.new(how: how))
      end

      # Clients that connect from now on are refused, which a load balancer
      # retries elsewhere, rather than queued in a backlog that no worker
      # accepts and the kernel resets at exit (Listener#stop_listening). Not
      # when a new master took over (it serves these sockets) or while one
      # starts or gives up: the listeners are this master's alone only then.
      def stop_listening
        @server.stop_listening if owns_socket_files?
      end

      # A child's channel reaches end of stream when it exits; reaping then
      # logs it (#log_exit).
      def wait_for_children(seconds)
        limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
        while @children.any?(&:pid)
          left = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          break unless left.positive?

          IO.select(@children.channels, nil, nil, [left, TICK].min)
          reap
        end
      end
    end
  end
end
