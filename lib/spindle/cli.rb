# frozen_string_literal: true

require "optparse"
require_relative "version"
require_relative "config"
require_relative "config/app_file"
require_relative "config/threads_unread"
require_relative "log"
require_relative "boot/app_loader"
require_relative "process/server"
require_relative "boot/memory_setup"
require_relative "boot/startup_failure"

module Spindle
  # bin/spindle: flags (generated from Config::OPTIONS) and a rackup file in, a
  # serving process out. A failure to start is one line on stderr, never a
  # backtrace, and its exit status says whose move it is:
  #   2  Spindle could not start with what it was given: a bad flag or value, a
  #      config file that fails, a pid file naming a live server, a listener or
  #      control endpoint it cannot open
  #      (in use, privileged port, missing directory), in one process or while
  #      a cluster master boots. Fix the command line or the machine.
  #   1  the app could not be loaded (rackup file missing, raising, no `run`).
  #      Fix the app.
  # A server that started and then stops exits 0 (or 1, see docs/SIGNALS.md).
  class CLI
    USAGE = "Usage: spindle [options] [config.ru]"
    EPILOGUE = <<~TEXT.freeze
      The config file (-C FILE) is Ruby: one method per option (bind, engine, threads,
      max_body, ...) and the cluster's lifecycle hooks:
        #{Config::DSL::HOOKS.map { |h| "#{h.name} { #{h.block_args.empty? ? '' : "#{h.block_args} "}... }" }.join("\n  ")}
      docs/CONFIG.md documents every option, the file's language and each hook.

      Exit status: 0 stopped cleanly; 1 the app could not be loaded; 2 Spindle could not
      start (a bad flag, value or config file, or a listener it cannot open).
    TEXT

    STARTUP_ERRORS = [OptionParser::ParseError, Config::Error, Listener::Error, Engine::UnknownEngine,
                      PidFile::Error].freeze

    def run(argv)
      @argv = argv.dup
      values = parse(argv)
      return 0 if values.nil?

      serve(Config.build(values), values)
    rescue *STARTUP_ERRORS => e
      fail_with(e, 2)
    rescue AppLoader::Error => e
      fail_with(e, 1)
    end

    # The values the command line sets, or nil when it only asked for -h or -v.
    def parse(argv)
      values = {}
      done = false
      parser = option_parser(values) { done = true }
      rest = parser.parse(argv)
      return nil if done
      raise OptionParser::ParseError, "one rackup file at most, got #{rest.join(' ')}" if rest.size > 1

      values[:rackup] = rest.first if rest.first
      app_file = Config::AppFile.find(AppLoader.resolve(values[:rackup]))
      values[:config_file] ||= app_file if app_file # an app's config/spindle.rb, when no -C
      values
    end

    private

    def warn_threads_unread(values, config)
      warning = Config::ThreadsUnread.warning(values, config, threads: "--threads", loops: "--loops N")
      warn warning if warning
    end

    def fail_with(error, status)
      warn StartupFailure.line(error)
      status
    end

    def serve(config, values)
      env = MemorySetup.environment_for(config)
      MemorySetup.reexec(env, @argv) if env
      warn_threads_unread(values, config) # after the re-exec: said once, not by both
      ENV["RACK_ENV"] = config.environment
      raise_open_file_limit
      log = Log.build(config)
      config.sizing_notes.each { |line| log.info(line) } unless config.cluster? # a master says them as it boots
      rackup = AppLoader.resolve(config.rackup)
      Cluster::HotRestart.remember(@argv) # USR2 reruns this command line, with or without -w
      return serve_cluster(config, log, rackup) if config.cluster?

      Server.new(AppLoader.load(rackup), config, log, restartable: true).bind.run
      0
    end

    # Every connection is a file descriptor; a soft limit of 1024 would cap a
    # fiber engine at ~1000 clients. Take what the hard limit allows.
    def raise_open_file_limit
      soft, hard = Process.getrlimit(:NOFILE)
      Process.setrlimit(:NOFILE, hard) if soft < hard
    rescue Errno::EPERM, NotImplementedError
      nil
    end

    def serve_cluster(config, log, rackup)
      # Loaded here, not first in a worker: an engine that cannot run (async
      # 2.24.0 on Ruby 3.1) is one start-up line, not a worker failing forever.
      Engine.fetch(config.engine)
      require_relative "cluster/master"
      Cluster::Master.new(config, log, rackup).run
      0
    end

    def option_parser(values, &done)
      OptionParser.new do |opts|
        opts.banner = USAGE
        opts.separator ""
        Config::OPTIONS.each { |option| define(opts, option, values) if option.cli }
        opts.on("-v", "--version", "Print the version and exit.") do
          puts "spindle #{VERSION}"
          done.call
        end
        opts.on("-h", "--help", "Print this help and exit.") do
          puts opts
          done.call
        end
        opts.separator ""
        EPILOGUE.each_line { |line| opts.separator(line.chomp) }
      end
    end

    def define(opts, option, values)
      flags = option.flag
      flags = [flags.first, option.spelled(flags.last)] if option.arg
      opts.on(*flags, option.description) do |raw|
        if option.name == :binds
          (values[:binds] ||= []) << raw
        elsif option.name == :sidecars
          (values[:sidecars] ||= []).concat(option.value(raw))
        else
          values[option.name] = option.value(raw)
        end
      end
    end
  end
end
