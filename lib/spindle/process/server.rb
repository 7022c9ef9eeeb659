# frozen_string_literal: true

require_relative "../listener"
require_relative "phase"
require_relative "../request/handler"
require_relative "../request/arrival_clock"
require_relative "../engine"
require_relative "../engine/rebalancer"
require_relative "signals"
require_relative "../ops/thread_dump"
require_relative "single_restart"
require_relative "../boot/file_limit"
require_relative "../boot/rails_check"
require_relative "../boot/mn_threads_check"
require_relative "single_services"
require_relative "../config/cluster_only"
require_relative "../ops/pid_file"
require_relative "../ops/process_stats"
require_relative "../ops/cpu_affinity"
require_relative "../ops/affinity_watch"
require_relative "../systemd/notifier"
require_relative "../systemd/watchdog"
require_relative "../systemd/activation"

module Spindle
  # One serving process: listeners, an engine and its handler, and the
  # signals that stop it (Signals). Alone (no workers) #run drives it with
  # Signals::SINGLE: TERM and INT drain (after --drain-delay: stop accepting
  # and listening, let in-flight requests finish within shutdown_timeout),
  # QUIT drains with no limit, a second stop signal stops at once, USR2
  # restarts (SingleRestart); SingleServices runs --metrics, --control and
  # --worker-memory-limit beside it. In cluster mode a Worker drives the same
  # object with Signals::WORKER.
  #
  # The Server alone moves the process's Phase (#phase); the engine, the
  # handler, the signals, the restart, the side services, the rebalancer and
  # the sibling share read it, or follow its moves (Phase#on_change).
  class Server
    class << self
      attr_accessor :warned_at_boot # see #warn_at_boot
    end

    attr_reader :listeners, :handler, :phase

    # restartable: a command line was recorded (bin/spindle's, or the rackup
    # handler's: RackupRestart), so USR2 can rerun it.
    # slot: a worker's index (--cpu-affinity picks its CPU by it).
    # siblings: a cluster worker's SiblingShare (joined in #prepare).
    def initialize(app, config, log, listeners: [], multiprocess: false, restartable: false, slot: 0, siblings: nil)
      @app = app
      @siblings = siblings
      @slot = slot
      @config = config
      @log = log
      @listeners = listeners
      @multiprocess = multiprocess
      @restartable = restartable
      @bound = false
      @phase = Phase.new
      # Held while #drain moves the phase and logs its line, and through a
      # forced exit: #serve waits on it, so a process never exits between
      # the two, nor with 0 while a forced exit runs (a barrier, no state).
      @draining = Thread::Mutex.new
      Listener.reload_tls_on_hup(@listeners, @log) # inherited ones (a master after USR2)
    end

    # Opens the listeners, or takes over those of the process that restarted
    # into this one, or those systemd passed (Systemd::Activation). Raises
    # Listener::Error (port in use, bad URI, a passed socket no bind wants).
    def bind
      inherited = SingleRestart.inherited_listeners if @restartable
      @listeners = inherited || Systemd::Activation.take.listeners_for(@config.binds) do |uri|
        Listener.open(uri, backlog: @config.backlog) { |skipped| @log.info("spindle: #{skipped}") }
      end
      @successor = !inherited.nil?
      Listener.reload_tls_on_hup(@listeners, @log)
      @bound = true
      self
    rescue Listener::Error
      close_listeners
      raise
    end

    # Builds the handler and the engine, in the process that will serve. Every
    # way in (bin/spindle, a cluster worker, the rackup handler) passes here,
    # so this is where the open-file limit is raised.
    def prepare
      FileLimit.ensure_room(engine_class.connection_capacity(@config), @log)
      warn_at_boot
      pin_to_cpu if @config.cpu_affinity # before the engine starts its threads
      @handler = Handler.new(@app, @config, @log, multithread: engine_class.multithread?,
                                                  multiprocess: @multiprocess, phase: @phase)
      @listeners.each { |listener| ArrivalClock.stamp(listener) } if @handler.path.timed?
      siblings = @siblings if @siblings&.join(phase: @phase)
      @engine = engine_class.new(listeners: @listeners, handler: @handler, config: @config, log: @log,
                                 siblings: siblings, phase: @phase)
      @rebalancer = Engine::Rebalancer.new(siblings, @handler, @phase) if siblings
      self
    end

    # Single mode: serve until a stop signal, then close the listeners.
    # Raises PidFile::Error when --pidfile names another live Spindle.
    def run
      predecessor = SingleRestart.predecessor if @restartable
      @pid_file = PidFile.for(@config, @log)&.tap { |file| file.check!(predecessor: predecessor) }
      prepare
      warn_cluster_only
      @notifier = Systemd::Notifier.from_env(@log)
      @restart = SingleRestart.new(@log, @listeners, phase: @phase, command_line: @restartable, notifier: @notifier)
      install_signals(Signals::SINGLE)
      @services = SingleServices.new(@config, @log, self, @restart).start(successor: @successor)
      announce_serving(predecessor)
      serve
      @log.info("spindle: stopped")
    ensure
      @services&.close
      close_listeners(unlink: owns_socket_files?)
      @pid_file&.remove
    end

    # Returns once the engine has stopped, and after a drain under way has
    # logged its line: an idle engine stops at once, and the process exited
    # (a worker: exit!) before the signal thread wrote "draining".
    def serve
      @rebalancer&.start
      @engine.run
    ensure
      @rebalancer&.stop
      @draining.synchronize {}
    end

    # A stop signal (SINGLE's on_stop): first the drain delay, if there is
    # one, then the drain. During the delay the process still accepts and
    # serves, but the health path answers 503 and responses close their
    # connections, so load balancers move their traffic away before any
    # connection is refused (docs/DRAINING.md). No delay when the process
    # hands over to its USR2 successor: that one serves the same sockets,
    # and a 503 from here beside its 200s would only confuse the checks.
    # drain_delay: 0 in a worker, whose master times the delay.
    #
    # A worker that became its master's mold once drained (#become_mold)
    # ends at once instead, as the mold's own traps would.
    def stop_gracefully(timeout, drain_delay: @config.drain_delay)
      return exit!(0) unless @phase.end!

      @phase.hand_over! if @restart&.successor?
      tell_systemd_stopping(timeout)
      return drain(timeout) unless drain_delay.positive? && !@phase.handed_over?

      leave_pool
      @log.info("spindle: drain delay: health checks answer 503, still serving for #{drain_delay}s, " \
                "then draining; signal again to stop at once")
      Thread.new do
        sleep drain_delay
        drain(timeout)
      end
    end

    # The drain delay has begun (here, or in the master for a worker): the
    # health path says 503 and responses say "connection: close".
    def leave_pool = @phase.leave!

    # Stops accepting and lets in-flight requests finish; after timeout seconds
    # (nil: no limit) the process exits anyway. Moving the phase is the
    # drain: the engine stops accepting, the side services let a successor
    # have their addresses, the rebalancer stops and the sibling share
    # leaves, each on its own watch. Called again (a stop while draining to
    # become the mold), it moves nothing but sets the stop's time limit.
    # The log line comes last: once it is out, every response says
    # "connection: close" (tests, and operators, read it as "draining now").
    def drain(timeout)
      @draining.synchronize do
        @phase.drain!
        stop_listening if owns_socket_files? # not in a worker: its master decides
        @log.info("spindle: draining (#{timeout ? "up to #{timeout}s" : 'no time limit'}); signal again to stop at once")
      end
      Thread.new { sleep timeout; expire(timeout) } if timeout
    end

    # A worker drained for its master's BecomeMold: true when it now turns
    # into the mold, false when a stop came first (it then exits).
    def become_mold = @phase.become_mold!

    def backlog = @engine.backlog

    # allocator: the one this process runs on (jemalloc when --allocator
    # preloaded it), so an operator sees it without asking spindlectl.
    def startup_line
      yjit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? "on" : "off"
      sizing = engine_class.sizing(@config)&.then { |s| " #{s}" }
      workers = @config.cluster? ? " workers=#{@config.workers}" : ""
      "spindle #{VERSION} engine=#{@config.engine}#{sizing}#{workers} " \
        "binds=#{@listeners.map(&:uri).join(',')} pid=#{Process.pid} ruby=#{RUBY_VERSION} yjit=#{yjit} " \
        "allocator=#{ProcessStats.allocator}"
    end

    def close_listeners(unlink: true)
      @listeners.each { |l| l.close(unlink: unlink) }
    end

    # The service stops here (a drain alone, or the master's stop): clients
    # connecting from now on are refused, not queued to be reset at exit
    # (Listener#stop_listening). After the drain delay, which keeps
    # accepting on purpose (docs/DRAINING.md).
    def stop_listening = @listeners.each(&:stop_listening)

    # table: Signals::SINGLE or Signals::WORKER. Returns the Signals.
    # drain_delay: see #stop_gracefully.
    def install_signals(table, drain_delay: @config.drain_delay)
      Signals.new(table, @log, @phase)
             .on_stop do |how|
               stop_gracefully(how == :timed ? @config.shutdown_timeout : nil, drain_delay: drain_delay)
             end
             .on_force { |why| force_exit(why) }
             .on_restart { @restart.start }
             .on_dump { dump_threads }
             .install
    end

    # Every thread's backtrace and the requests in flight, to the log (URG).
    def dump_threads
      ThreadDump.new(@log, @handler&.tracker).write
    end

    private

    # The pid file and systemd learn of this process (MAINPID= after a
    # restart) before the predecessor is told to go: its exit must not read
    # as the service dying. The start-up line comes after the pid file, so
    # whoever waits for the line finds the file.
    def announce_serving(predecessor)
      @pid_file&.write
      @notifier.ready(status: "serving (engine #{@config.engine})", main_pid: predecessor && Process.pid)
      @watchdog = Systemd::Watchdog.from_env(@notifier)&.start_thread
      @log.announce(startup_line)
      return unless predecessor

      @services.taking_over
      SingleRestart.tell_predecessor(predecessor, @log)
    end

    # QUIT while a successor runs is that successor taking over (it told
    # systemd already): this process leaves quietly, and stops pinging.
    def tell_systemd_stopping(timeout)
      return unless @notifier
      return @watchdog&.kill if timeout.nil? && @phase.handed_over?

      @notifier.stopping(status: "draining")
    end

    def engine_class = @engine_class ||= Engine.fetch(@config.engine)

    # What the app or the Ruby may do wrong under this engine, logged once per
    # process (a worker forked from a mold that logged it does not repeat it).
    # At WARN: the server serves on (docs/LOGGING.md keeps ERROR for failures).
    def warn_at_boot
      messages = [RailsCheck.isolation_warning(@config.engine), MnThreadsCheck.warning(@config.engine)].compact
      return if messages.empty? || Server.warned_at_boot

      Server.warned_at_boot = true
      messages.each { |message| @log.warn(message) }
    end

    # A process alone: the options that act on workers do nothing here, and
    # say so (Config::ClusterOnly).
    def warn_cluster_only
      Config::ClusterOnly.warnings(@config).each { |line| @log.warn(line) }
    end

    def pin_to_cpu
      mode = @config.cpu_affinity
      return pin_app_watched if mode == "auto"

      cpu = mode == "app" ? CpuAffinity.pin_app(@slot) : CpuAffinity.pin(@slot)
      return @log.info("spindle: #{mode == 'app' ? 'app threads' : 'process'} on CPU #{cpu} (--cpu-affinity=#{mode})") if cpu

      @log.error("spindle: --cpu-affinity: this system cannot pin a thread to a CPU; running unpinned")
    end

    # --cpu-affinity=auto: =app, where it pays (ENGINES.md): an engine whose
    # app threads hand the GVL to each other, fewer serving processes than
    # CPUs. Watched, since others may want that CPU.
    def pin_app_watched
      processes = [@config.workers, 1].max
      return unless engine_class.multithread? && (CpuAffinity.allowed&.size || 0) > processes

      cpu = CpuAffinity.pin_app(@slot, base: CpuAffinity.base)
      @log.info("spindle: app threads on CPU #{cpu} (--cpu-affinity=auto; they leave it if other processes want it)")
      AffinityWatch.new(@log).start
    end

    def expire(timeout)
      @log.error("in-flight requests did not finish within #{timeout}s; exiting")
      force_exit(nil)
    end

    # why: the log line of a second stop signal (nil: the timeout said it).
    # Holds @draining to the end: the forced phase wakes the engine, which
    # may find nothing in flight and return, and #serve must not let the
    # process exit 0 ("stopped") before this exits 1.
    def force_exit(why)
      @draining.synchronize do
        @phase.force!
        @log.error(why) if why
        log_cut_off
        close_listeners(unlink: owns_socket_files?)
        @pid_file&.remove
        exit!(1)
      end
    end

    # The requests a forced exit cuts off: method and path, never a body.
    # Best effort: the process is about to exit whatever happens here.
    def log_cut_off
      requests = @handler.tracker.in_flight_connections.filter_map { |conn| conn.current_env }
      return if requests.empty?

      @log.error("cut off #{requests.size} request(s) in flight: " \
                 "#{requests.map { |env| Handler.describe(env) }.join(', ')}")
    rescue StandardError
      nil
    end

    # A unix socket's file belongs to the process that bound it, until a
    # successor (USR2) shares it. A worker's listeners are its master's: a
    # worker whose drain runs out of time must leave the file to the master
    # and the other workers still serving on it.
    def owns_socket_files? = @bound && !@restart&.successor?
  end
end
