# frozen_string_literal: true

require_relative "signal_queue"
require_relative "../log/reopen"

module Spindle
  # The signals of a process that serves requests: alone (no -w) or as a
  # cluster worker. Both take them the same way (SignalQueue: the trap only
  # queues, a watcher thread acts) and differ only in their table below; the
  # master has its own reader (Cluster::Master#dispatch). docs/SIGNALS.md
  # says the same as these tables.
  #
  # What an entry means:
  #   :drain           stop accepting, finish in-flight requests within
  #                    --shutdown-timeout
  #   :drain_unlimited the same with no time limit
  #   :restart         USR2: restart in place with new code (SingleRestart)
  #   :reopen          HUP: run the Reopen actions (log files, then what
  #                    other code registered)
  #   :dump            log every thread's backtrace and the requests in
  #                    flight (ThreadDump)
  #   a String         log it and carry on: it says what to send instead
  #   :ignore          nothing: the kernel discards it, no thread wakes
  # Any stop signal after the first exits at once.
  #
  # A worker's master does not signal it to stop: it orders the stop over
  # the worker's channel (#order, Message::Stop), which is no signal and so
  # never counts as the second one. A signal to the whole process group
  # (Ctrl-C in a terminal, `kill -TERM -PGID`, systemd without
  # KillMode=mixed) reaches every worker from the kernel *and* made the
  # master stop them; when the master forwarded it as a signal, each worker
  # took the master's copy as "exit at once" and cut its requests off. Now
  # only what an operator sends counts: a second stop signal, or the
  # master's own stop at once (its second stop signal).
  class Signals
    # Alone, every signal a Puma or Unicorn operator might send has a meaning,
    # because the kernel's defaults are harsh: USR1, USR2 and HUP would end the
    # process with no log line, and TTIN or TTOU would suspend it (state T)
    # while clients wait. WINCH keeps its default, which ignores it: a terminal
    # resize is no command.
    SINGLE = {
      TERM: :drain, INT: :drain, QUIT: :drain_unlimited, USR2: :restart, HUP: :reopen,
      USR1: "USR1 ignored: a phased restart needs workers (-w); USR2 restarts a single process",
      TTIN: "TTIN ignored: adding a worker needs cluster mode (-w)",
      TTOU: "TTOU ignored: removing a worker needs cluster mode (-w)",
    }.freeze

    # A worker obeys stop signals, and HUP, which its master forwards to it
    # (logrotate signals the master only); the others are the master's
    # commands. A worker starts life with the master's trap handlers (fork
    # copies them), so every signal the master traps is listed here: none may
    # run a master's handler in a worker. URG asks for a thread dump: the
    # master sends it before it kills a stuck worker. URG, because nothing
    # else sends it (the kernel only for out-of-band TCP data on a socket
    # whose owner was set with F_SETOWN, which none is) and its default
    # action is to ignore it, so one that arrives before the trap is set (a
    # worker still loading the app) harms nothing.
    WORKER = {
      TERM: :drain, INT: :drain, QUIT: :drain_unlimited, HUP: :reopen, URG: :dump,
      USR1: :ignore, USR2: :ignore, TTIN: :ignore, TTOU: :ignore,
    }.freeze

    STOPS = { drain: :timed, drain_unlimited: :unlimited }.freeze

    # phase: the process's Phase, which the Server moves when told to stop
    # (#on_stop); read here to know whether a stop began already.
    def initialize(table, log, phase)
      @table = table
      @log = log
      @phase = phase
      # Whether an operator's stop signal came. Not the phase: a worker's
      # phase is moved by its master's order too, and the same stop from the
      # kernel after that order is no second signal.
      @signalled = false
    end

    # The block gets :timed or :unlimited.
    def on_stop(&block)
      @on_stop = block
      self
    end

    # The block gets the log line that says why.
    def on_force(&block)
      @on_force = block
      self
    end

    def on_restart(&block)
      @on_restart = block
      self
    end

    def on_dump(&block)
      @on_dump = block
      self
    end

    def install
      ignored, queued = @table.keys.partition { |name| @table[name] == :ignore }
      ignored.each { |name| Signal.trap(name, "IGNORE") }
      @queue = SignalQueue.new.trap(queued)
      @queue.watch { |item| item.is_a?(Array) ? obey(*item) : act(item) }
      self
    end

    # The master's stop order (Message::Stop: :timed and :unlimited begin a
    # drain as TERM and QUIT do, :now exits at once), handed here by the
    # worker's channel thread. It joins the signals' queue, so one thread
    # decides every stop, in the order they came.
    def order(how) = @queue.push([:order, how])

    private

    # One failed action must not end the watcher: later signals still count.
    def act(name)
      action = @table.fetch(name)
      if STOPS.key?(action) then stop(action)
      elsif action == :restart then restart
      elsif action == :reopen then reopen
      elsif action == :dump then @on_dump&.call
      else @log.info("spindle: #{action}")
      end
    rescue StandardError => e
      @log.exception(e, "handling #{name} failed")
    end

    # A stop signal. The first begins the drain (unless the master's order
    # began it already); only a second *signal* exits at once.
    def stop(action)
      return @on_force.call("second stop signal: exiting at once") if @signalled

      @signalled = true
      begin_stop(STOPS.fetch(action))
    end

    # The master's order: a stop under way (the group signal got here first)
    # goes on as it is; :now is the master's stop at once.
    def obey(_order, how)
      return @on_force.call("the master stops at once: exiting at once") if how == :now

      begin_stop(how)
    rescue StandardError => e
      @log.exception(e, "stopping on the master's order failed")
    end

    # The Server decides the stop in the phase (Phase#end!), so a stop that
    # began already is not begun again.
    def begin_stop(how)
      @on_stop.call(how) unless @phase.ending?
    end

    def reopen
      failed = Reopen.run(@log)
      @log.info("spindle: HUP: log files reopened#{failed.empty? ? '' : "; failed: #{failed.join(', ')}"}")
    end

    def restart
      return @log.info("spindle: USR2 ignored: the process is draining") if @phase.stopping?

      @on_restart.call
    end
  end
end
