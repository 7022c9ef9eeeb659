# frozen_string_literal: true

require_relative "config"
require_relative "config/rackup_options"
require_relative "config/app_file"
require_relative "config/threads_unread"
require_relative "log"
require_relative "process/server"
require_relative "boot/memory_setup"
require_relative "boot/startup_failure"
require_relative "process/rackup_restart"

module Spindle
  # Spindle behind the rackup interface: `rackup -s spindle`, `rails server -u
  # spindle`. Host and Port come from rackup; every other option the CLI has is
  # a rackup option in CamelCase (-O Engine=fibers -O Workers=2 -O MaxBody=nil,
  # -O Config=spindle.rb for a config file with hooks); see
  # Config::RackupOptions and docs/CONFIG.md.
  module RackHandler
    # What stops a start: said in one line, exit status 2 (StartupFailure),
    # as bin/spindle says it, instead of rackup's backtrace and status 1.
    STARTUP_ERRORS = [Config::Error, Listener::Error, Engine::UnknownEngine, PidFile::Error].freeze

    # What rackup and `rails server` call on a handler. The modules they find
    # (Rackup::Handler::Spindle, Rack::Handler::Spindle) extend it rather than
    # being RackHandler under another name: both name the server after the
    # handler's module, and `rails server` printed "=> Booting RackHandler".
    module Entry
      def run(app, **options, &block) = RackHandler.run(app, **options, &block)

      def valid_options = RackHandler.valid_options
    end

    module_function

    def run(app, **options, &block)
      serve(app, options, &block)
    rescue *STARTUP_ERRORS => e
      StartupFailure.exit_or_raise(e)
    end

    def serve(app, options)
      config = build_config(options)
      reexec_with_memory_settings(config, options[:pid])
      warn_threads_unread(options, config) # after the re-exec: said once, not by both
      log = Log.build(config)
      return run_cluster(app, config, log, options) if config.cluster? # its master logs the sizing notes

      config.sizing_notes.each { |line| log.info(line) }

      restartable = RackupRestart.remember(options[:pid])
      RackupRestart.reclaim_pid_file(options[:pid])
      server = Server.new(app, config, log, restartable: restartable).bind
      yield server if block_given?
      server.run
    end

    def valid_options = Config::RackupOptions.help

    # -O Bind, or a config file's bind, wins over rackup's Host and Port (which
    # rackup always fills in, so they cannot tell us whether they were typed),
    # except under `rails server`, which says what was typed: its -p or -b win.
    # Without -O Config, the app's config/spindle.rb is read (as Puma reads
    # config/puma.rb under `rails server`): options[:config] is rackup's config.ru.
    def build_config(options)
      values = Config::RackupOptions.values(options)
      app_file = Config::AppFile.find(options[:config] || "config.ru")
      values[:config_file] ||= app_file if app_file
      host_port = [Config::RackupOptions.host_port_bind(options)]
      typed = Array(options[:user_supplied_options]) & %i[Host Port]
      values[:binds] ||= host_port unless typed.empty?
      Config.build(values, default_binds: host_port)
    end

    def warn_threads_unread(options, config)
      warning = Config::ThreadsUnread.warning(Config::RackupOptions.values(options), config,
                                              threads: "-O Threads", loops: "-O Loops=N")
      warn warning if warning
    end

    # The allocator settings are read once, at process start (see MemorySetup).
    # bin/spindle re-executes itself with them; here the process is rackup's (or
    # rails server's), so it is re-executed with its own command line.
    def reexec_with_memory_settings(config, pid_file)
      env = MemorySetup.environment_for(config)
      command = RackupRestart.own_command_line if env
      return unless command

      # The re-executed process has the same pid, and would refuse to start
      # ("A server is already running").
      Cluster::HotRestart.release_pid_file(pid_file)
      exec(env, *command)
    end

    # -O Workers=N: the master forks workers from this process, which holds the
    # app rackup built (the preload); with -O Preload=false each worker loads
    # rackup's config.ru itself. A hot restart (USR2) starts this same command
    # again, which inherits the listeners as a bin/spindle would
    # (RackupRestart); without /proc there is none to rerun: USR2 is logged
    # and ignored, and --restart-file runs a phased restart instead.
    def run_cluster(app, config, log, options)
      Engine.fetch(config.engine) # as in CLI#serve_cluster: fails here, not in every worker
      require_relative "cluster/master"
      RackupRestart.remember(options[:pid])
      RackupRestart.reclaim_pid_file(options[:pid])
      rackup = options[:config] || "config.ru"
      Cluster::Master.new(config, log, rackup, app: config.preload ? app : nil).run
    end
  end
end
