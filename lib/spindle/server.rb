# frozen_string_literal: true

require_relative "listener"
require_relative "handler"
require_relative "engine"
require_relative "signals"

module Spindle
  # One serving process: its listeners, its engine, its handler, and what TERM
  # and INT do to them. The first signal drains: stop accepting, let in-flight
  # requests finish within shutdown_timeout. The second stops at once.
  class Server
    attr_reader :listeners

    def initialize(app, config, log)
      @app = app
      @config = config
      @log = log
      @listeners = []
    end

    # Opens the listeners. Raises Listener::Error (port in use, bad URI).
    def bind
      @listeners = @config.binds.map { |uri| Listener.open(uri, backlog: @config.backlog) }
      self
    rescue Listener::Error
      close_listeners
      raise
    end

    def run
      engine_class = Engine.fetch(@config.engine)
      @handler = Handler.new(@app, @config, @log, multithread: engine_class.multithread?)
      @engine = engine_class.new(listeners: @listeners, handler: @handler, config: @config, log: @log)
      Signals.new(@log).on_stop { drain }.on_force { force_exit }.install
      @log.announce(startup_line)
      @engine.run
      @log.info("spindle: stopped")
    ensure
      close_listeners
    end

    def startup_line
      yjit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? "on" : "off"
      threads = %w[threads hybrid].include?(@config.engine) ? " threads=#{@config.threads.join(':')}" : ""
      "spindle #{VERSION} engine=#{@config.engine}#{threads} " \
        "binds=#{@listeners.map(&:uri).join(',')} pid=#{Process.pid} ruby=#{RUBY_VERSION} yjit=#{yjit}"
    end

    private

    def drain
      @log.info("spindle: draining (up to #{@config.shutdown_timeout}s); signal again to stop at once")
      @handler.stopping!
      @engine.stop
      Thread.new do
        sleep @config.shutdown_timeout
        @log.error("in-flight requests did not finish within #{@config.shutdown_timeout}s; exiting")
        force_exit
      end
    end

    def force_exit
      close_listeners
      exit!(1)
    end

    def close_listeners
      @listeners.each(&:close)
    end
  end
end
