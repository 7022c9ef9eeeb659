# frozen_string_literal: true

require "socket"
require_relative "../server"
require_relative "../app_loader"
require_relative "../process_stats"
require_relative "message"
require_relative "children"
require_relative "spawner"
require_relative "rollout"
require_relative "signal_queue"
require_relative "subreaper"
require_relative "hot_restart"
require_relative "stats_report"
require_relative "control_server"

module Spindle
  module Cluster
    # The cluster's master: holds the listeners, forks and supervises workers,
    # and never serves a request. Signals and control commands are queued; the
    # loop below is the only place that acts on them, one at a time. See
    # docs/SIGNALS.md and docs/REFORKING.md.
    class Master
      TICK = 0.5
      MEMORY_CHECK_EVERY = 5.0

      attr_reader :children, :generation, :desired, :started_at

      # app: an app already built (the rackup handler's); preloaded instead of
      # loading rackup a second time.
      def initialize(config, log, rackup, app: nil)
        @config = config
        @log = log
        @rackup = rackup
        @app = app
        @children = Children.new
        @desired = config.workers
        @generation = 0
        @boot_failures = 0
        @next_spawn_at = 0
        @next_memory_check = 0
        @rollout = nil
        @stopping = nil
        @handed_over = false
      end

      def run
        boot
        tick until @stopping && @children.none?
        @log.info("spindle: master stopped")
      ensure
        @control&.close
        @server&.close_listeners(unlink: !@handed_over)
      end

      private

      def boot
        Subreaper.enable
        @signals = SignalQueue.new.trap_signals
        inherited = HotRestart.inherited_listeners
        @parent_master = HotRestart.parent
        @app ||= AppLoader.load(@rackup) if @config.preload
        @server = Server.new(@app, @config, @log, listeners: inherited || [])
        @server.bind unless inherited
        @spawner = Spawner.new(config: @config, log: @log, children: @children, listeners: @server.listeners,
                               closes_in_child: [@signals.reader])
        @spawner.app_source(@app, @rackup)
        @control = ControlServer.open(@config, @signals) if @config.control
        @started_at = Time.now
        Process.setproctitle("spindle master")
        @log.announce(@server.startup_line)
      end

      def tick
        ready, = IO.select([@signals.reader, *@children.channels], nil, nil, TICK)
        ready&.each { |io| read_messages(io) unless io == @signals.reader }
        @signals.drain.each { |item| dispatch(item) }
        reap
        murder_lazy_workers
        recycle_fat_workers
        advance_rollout
        refork if refork_due?
        maintain_worker_count
      end

      def dispatch(item)
        case item
        when :TERM, :INT then stop(:TERM)
        when :QUIT then stop(:QUIT)
        when :USR1 then start_rollout(@children.active.dup, "phased restart")
        when :USR2 then hot_restart
        when :TTIN then @desired += 1
        when :TTOU then shrink
        when :REFORK then refork
        when :GC then @children.workers.each { |c| Message.send_to(c.channel, Message::RunGC.new(reason: "spindlectl")) }
        when Array then answer(*item)
        end
      end

      # A control command that wants a reply: [:stats, queue].
      def answer(command, reply)
        reply << (command == :stats ? StatsReport.new(self, @config).to_h : { "error" => "unknown" })
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
        when Message::Booted then booted(child, message)
        when Message::MoldReady then mold_ready(child, message)
        end
      end

      def booted(child, message)
        child.pid = message.pid
        child.state = :serving
        child.booted_at = Time.now
        child.last_checkin = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @boot_failures = 0
        return Process.kill(:TERM, child.pid) if @stopping

        tell_parent_to_drain if @parent_master && @children.active.count(&:serving?) >= @desired
      end

      # A worker that died before it booted has no pid to reap by: its closed
      # channel is all that is left of it.
      def channel_closed(child)
        return unless child && child.pid.nil?

        boot_failed(child)
        @children.remove(child)
      end

      # --- processes ----------------------------------------------------------

      def reap
        loop do
          pid, status = Process.wait2(-1, Process::WNOHANG)
          return unless pid

          child = @children.by_pid(pid)
          next unless child

          boot_failed(child) if child.state == :booting
          @log.error("worker #{child.index} (pid #{pid}) died: #{status}") unless expected_exit?(child)
          @children.remove(child)
        end
      rescue Errno::ECHILD
        nil
      end

      def expected_exit?(child) = @stopping || child.state == :retiring || child.mold?

      def boot_failed(child)
        @boot_failures += 1
        delay = [0.5 * (2**(@boot_failures - 1)), 30].min
        @next_spawn_at = Process.clock_gettime(Process::CLOCK_MONOTONIC) + delay
        @log.error("worker #{child.index} failed to boot (#{@boot_failures} in a row); next try in #{delay}s")
      end

      def maintain_worker_count
        return if @stopping || @children.any? { |c| c.state == :mold_pending }
        return if Process.clock_gettime(Process::CLOCK_MONOTONIC) < @next_spawn_at

        (@desired - @children.active.size).times { spawn_worker(@children.free_index(@desired)) }
      end

      def spawn_worker(index) = @spawner.spawn(index)

      # A worker that stopped checking in, or whose oldest request has run past
      # the timeout, is stuck: kill it; maintain_worker_count replaces it.
      def murder_lazy_workers
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        limit = @config.worker_timeout
        @children.each do |child|
          next unless child.pid && (child.serving? || child.state == :retiring)

          silent = now - child.last_checkin
          busy = child.checkin&.oldest_request_age.to_f
          next unless silent > limit || busy > limit

          @log.error("worker #{child.index} (pid #{child.pid}) is stuck (silent #{silent.round(1)}s, " \
                     "oldest request #{busy.round(1)}s); killing it")
          kill(child, :KILL)
        end
      end

      def recycle_fat_workers
        limit = @config.worker_memory_limit
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return unless limit && !@rollout && now >= @next_memory_check

        @next_memory_check = now + MEMORY_CHECK_EVERY
        fat = @children.active.find { |c| c.serving? && ProcessStats.memory(c.pid)&.fetch(:uss).to_i > limit * 1024 * 1024 }
        start_rollout([fat], "worker #{fat.index} over #{limit} MiB") if fat
      end

      def retire(child)
        child.state = :retiring
        kill(child, :TERM)
      end

      def kill(child, signal)
        Process.kill(signal, child.pid) if child.pid
      rescue Errno::ESRCH
        nil
      end

      def shrink
        return if @desired <= 1

        @desired -= 1
        victim = @children.active.max_by(&:index)
        retire(victim) if victim
      end

      # --- rollouts, reforks, restarts -----------------------------------------

      def start_rollout(old, reason)
        return @log.info("spindle: #{reason} waits: #{@rollout.reason} in progress") if @rollout

        @log.info("spindle: #{reason}: replacing #{old.size} worker(s) one at a time")
        @rollout = Rollout.new(old, reason)
      end

      def advance_rollout
        return unless @rollout && !@stopping

        done = @rollout.advance(spawn: ->(index) { spawn_worker(index) }, retire: ->(child) { retire(child) })
        return unless done

        @log.info("spindle: #{@rollout.reason} done")
        @rollout = nil
      end

      def refork_due?
        counts = @config.refork_after
        return false unless counts && !@rollout && !@stopping && @children.none? { |c| c.state == :mold_pending }

        threshold = counts[[@generation, counts.size - 1].min]
        @children.any? { |c| c.serving? && c.generation == @generation && c.requests >= threshold }
      end

      # The busiest worker of the current generation becomes the mold; capacity
      # is one worker short until the new generation starts arriving.
      def refork
        return if @rollout || @stopping || @children.any? { |c| c.state == :mold_pending }

        candidate = @children.select(&:serving?).max_by(&:requests)
        return unless candidate

        @log.info("spindle: refork: worker #{candidate.index} (#{candidate.requests} requests) becomes the mold")
        candidate.state = :mold_pending
        Message.send_to(candidate.channel, Message::BecomeMold.new(generation: @generation + 1))
      end

      def mold_ready(child, message)
        previous = @children.find { |c| c.state == :mold }
        kill(previous, :TERM) if previous
        child.state = :mold
        child.pid = message.pid
        child.generation = message.generation
        @generation = message.generation
        start_rollout(@children.active.select { |c| c.generation < @generation }, "refork to generation #{@generation}")
      end

      def hot_restart
        pid = HotRestart.start(@server.listeners)
        @handed_over = true
        @log.info("spindle: hot restart: new master pid #{pid} takes over the listeners")
      end

      def tell_parent_to_drain
        Process.kill(:QUIT, @parent_master)
        @log.info("spindle: serving; told the previous master (pid #{@parent_master}) to drain")
      rescue Errno::ESRCH
        nil
      ensure
        @parent_master = nil
      end

      # TERM/INT: workers drain within shutdown_timeout. QUIT: no limit. A
      # second stop signal kills everything at once.
      def stop(how)
        if @stopping
          @children.each { |c| kill(c, :KILL) }
          @server.close_listeners(unlink: !@handed_over)
          exit!(1)
        end
        @stopping = how
        @log.info("spindle: stopping (#{how == :QUIT ? 'drain' : 'graceful'})")
        @children.each { |c| kill(c, c.mold? ? :TERM : how) }
      end
    end
  end
end
