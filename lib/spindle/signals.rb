# frozen_string_literal: true

require_relative "signal_queue"
require_relative "log/reopen"

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

    def initialize(table, log)
      @table = table
      @log = log
      @stopping = false
    end

    # Whether a stop signal came: a worker told to become the mold exits instead.
    def stopping? = @stopping

    # The block gets :timed or :unlimited.
    def on_stop(&block)
      @on_stop = block
      self
    end

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
      SignalQueue.new.trap(queued).watch { |name| act(name) }
      self
    end

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

    def stop(action)
      return @on_force.call if @stopping

      @stopping = true
      @on_stop.call(STOPS.fetch(action))
    end

    def reopen
      failed = Reopen.run(@log)
      @log.info("spindle: HUP: log files reopened#{failed.empty? ? '' : "; failed: #{failed.join(', ')}"}")
    end

    def restart
      return @log.info("spindle: USR2 ignored: the process is draining") if @stopping

      @on_restart.call
    end
  end
end
