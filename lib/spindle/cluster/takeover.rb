# frozen_string_literal: true

require_relative "hot_restart"

module Spindle
  module Cluster
    # The master's two roles in a hot restart (USR2, HotRestart), and what
    # each may touch meanwhile:
    #
    #   parent     It starts the successor (#start) and keeps serving. The
    #              successor's QUIT says it serves: the parent hands over
    #              (Phase#hand_over!) and drains. A successor that exits first
    #              failed: the parent keeps serving (#successor_exited).
    #   successor  It boots beside its parent and leaves it the control socket,
    #              the pid file and systemd. Once its own workers all serve it
    #              takes them over and tells the parent to drain (#serving); a
    #              worker that fails to boot first makes it give up and exit,
    #              the parent still serving the old code (#boot_failed).
    #
    # Ports, so a test drives it without a second master:
    #   services  MasterServices (notes, control socket, pid file, metrics)
    #   stop      ->(how) { ... } the master's stop (Shutdown#stop)
    #   kill      ->(pid, name) { ... } a signal to the parent
    #   launch    ->(listeners) { pid } starts the successor (HotRestart.start)
    class Takeover
      attr_reader :parent, :successor

      # parent: the previous master's pid when this one is its successor.
      def initialize(phase:, services:, log:, stop:, parent: HotRestart.parent,
                     kill: ->(pid, name) { Process.kill(name, pid) }, launch: HotRestart.method(:start))
        @phase = phase
        @services = services
        @log = log
        @stop = stop
        @parent = parent
        @kill = kill
        @launch = launch
        @successor = nil # the new master a USR2 started, until it takes over or dies
        @gave_up = false
      end

      # The master systemd and the pid file know: not a successor before it
      # takes over, nor a parent that handed over, nor one that gives up.
      def in_charge? = !@parent && !@phase.handed_over? && !@gave_up

      # A successor owns the socket files once it has taken over; until then
      # they are its parent's. A master that hands over leaves them too.
      def owns_socket_files? = !@parent && !@gave_up && !@successor

      def gave_up? = @gave_up

      # --- the parent -------------------------------------------------------------

      # USR2. One successor at a time: a second one would serve the same port
      # beside the first, each with its own workers.
      def start(listeners)
        refusal = if @phase.stopping? then "this master is stopping"
                  elsif @successor then "new master pid #{@successor} is starting"
                  elsif @parent then "this master has not taken over yet"
                  end
        return @log.info("spindle: hot restart ignored: #{refusal}") if refusal

        @successor = @launch.call(listeners)
        @log.info("spindle: hot restart: started new master pid #{@successor}; " \
                  "it takes over once its workers serve")
        @services.notes.reloading("hot restart: new master pid #{@successor} starting")
      end

      # QUIT: from the successor it says it serves; from anyone else it is a
      # drain (false: the master's stop signal then).
      def quit
        return false unless @successor

        @log.info("spindle: hot restart: new master pid #{@successor} takes over the listeners")
        @services.let_go_of_metrics # the successor waits for the address
        @phase.hand_over!
        true
      end

      def successor_exited(status)
        if @phase.draining?
          @log.error("new master pid #{@successor} exited: #{status}")
        else
          @log.error("hot restart failed: new master pid #{@successor} exited (#{status}) before it served; " \
                     "this master keeps serving")
          @services.notes.reloaded("hot restart failed: new master exited before it served; the previous master serves")
        end
        @successor = nil
      end

      # --- the successor ----------------------------------------------------------

      # Its workers all serve: the control socket, the pid file and systemd
      # move to this master. systemd hears MAINPID= before the parent is told
      # to go: the main process exiting first would read as the service dying.
      def serving(desired)
        return unless @parent

        parent = @parent
        @parent = nil
        @services.take_over
        @services.notes.took_over(desired)
        @kill.call(parent, :QUIT)
        @log.info("spindle: serving; told the previous master (pid #{parent}) to drain")
      rescue Errno::ESRCH
        nil
      end

      # The Supervisor's on_boot_failure. A successor whose worker cannot boot
      # gives up at once: its parent still serves the old code, and waiting
      # would only leave a second master holding the port with no worker.
      def boot_failed(child)
        return unless @parent && !@gave_up

        @log.error("hot restart: worker #{child.index} failed to boot; this new master gives up and exits, " \
                   "the previous master (pid #{@parent}) keeps serving")
        @gave_up = true
        @stop.call(:TERM)
      end
    end
  end
end
