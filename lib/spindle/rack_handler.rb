# frozen_string_literal: true

require_relative "config"
require_relative "log"
require_relative "server"

module Spindle
  # Spindle behind the rackup interface: `rackup -s spindle`, `rails server -u
  # spindle`. Host and Port come from rackup; Engine, Threads and Quiet may be
  # passed as rackup options (-O Engine=fibers).
  module RackHandler
    OPTIONS = {
      "Engine=NAME" => "blocking, threads (default), fibers or hybrid",
      "Threads=MIN:MAX" => "thread pool size (threads engine), loop threads (hybrid)",
      "Quiet" => "log only the start-up line and errors",
    }.freeze

    module_function

    def run(app, **options)
      config = Config.new(values(options))
      server = Server.new(app, config, Log.new(quiet: config.quiet)).bind
      yield server if block_given?
      server.run
    end

    def valid_options = OPTIONS

    def values(options)
      host = options.fetch(:Host, "0.0.0.0").to_s
      host = "[#{host}]" if host.include?(":")
      values = { binds: ["tcp://#{host}:#{options.fetch(:Port, 9292)}"] }
      values[:engine] = Config::BY_NAME[:engine].value(options[:Engine]) if options[:Engine]
      values[:threads] = Config::Coerce.thread_range(options[:Threads]) if options[:Threads]
      values[:quiet] = true if options[:Quiet]
      values
    end
  end
end
