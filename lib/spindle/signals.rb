# frozen_string_literal: true

module Spindle
  # The signals of a process serving alone (no -w). Every signal a Puma or
  # Unicorn operator might send has a meaning here, because the kernel's
  # defaults are harsh: USR1, USR2 and HUP would end the process with no log
  # line, and TTIN or TTOU would suspend it (state T) while clients wait.
  #
  # The trap handlers only write the signal's code to a pipe (nothing else is
  # safe in a trap); a watcher thread reads it and acts. WINCH is left at its
  # default, which ignores it: a terminal resize is no command. The table in
  # docs/SIGNALS.md says the same as these constants.
  class Signals
    # Drain: TERM and INT within --shutdown-timeout, QUIT with no limit. Any
    # stop signal after the first exits at once.
    STOP = { "TERM" => :timed, "INT" => :timed, "QUIT" => :unlimited }.freeze
    RESTART = "USR2"
    # Logged and ignored; each line says what to send instead.
    IGNORED = {
      "HUP" => "HUP ignored: no log file to reopen and no config to reload in a single process; " \
               "USR2 restarts it with new code",
      "USR1" => "USR1 ignored: a phased restart needs workers (-w); USR2 restarts a single process",
      "TTIN" => "TTIN ignored: adding a worker needs cluster mode (-w)",
      "TTOU" => "TTOU ignored: removing a worker needs cluster mode (-w)",
    }.freeze
    HANDLED = [*STOP.keys, RESTART, *IGNORED.keys].freeze

    def initialize(log)
      @log = log
      @stopping = false
    end

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

    def install
      reader, writer = IO.pipe
      HANDLED.each_with_index do |name, code|
        byte = code.chr
        Signal.trap(name) { writer.write_nonblock(byte, exception: false) }
      end
      Thread.new { watch(reader) }
      self
    end

    private

    def watch(reader)
      loop { act(HANDLED.fetch(reader.read(1).ord)) }
    end

    # One failed action must not end the watcher: later signals still count.
    def act(name)
      if STOP.key?(name) then stop(name)
      elsif name == RESTART then restart
      else @log.info("spindle: #{IGNORED.fetch(name)}")
      end
    rescue StandardError => e
      @log.exception(e, "handling #{name} failed")
    end

    def stop(name)
      return @on_force.call if @stopping

      @stopping = true
      @on_stop.call(STOP.fetch(name))
    end

    def restart
      return @log.info("spindle: USR2 ignored: the process is draining") if @stopping

      @on_restart.call
    end
  end
end
