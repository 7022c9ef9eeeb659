# frozen_string_literal: true

require_relative "config/options"
require_relative "config/dsl"
require_relative "config/env_layer"
require_relative "config/auto_sizing"
require_relative "http/parser_limits"
require_relative "engine"

module Spindle
  # The settings one server runs with. Built from defaults, then the
  # environment's PORT and WEB_CONCURRENCY (EnvLayer), then the config file,
  # then command-line flags (each layer wins over the one before). Read-only
  # once built; an option set to auto is a number by then (AutoSizing), and
  # #sizing_notes say how it was found.
  class Config
    DEFAULT_BIND = "tcp://0.0.0.0:9292"
    # HAProxy's defaults (inter 2s, fall 3) take a host out after 6 s; 10 s
    # covers that with a check interval to spare.
    DEFAULT_DRAIN_DELAY = 10.0
    # Two ways to say where to listen. A layer that names either replaces both
    # from the layer below; one layer naming both is an error (see #check_listen).
    LISTEN = %i[binds port].freeze

    # default_binds: where to listen when no layer says (the rackup handler's
    # Host and Port); without it, DEFAULT_BIND.
    def self.build(cli_values, default_binds: nil, env: ENV)
      values = OPTIONS.to_h { |o| [o.name, o.default_value] }
      file = cli_values[:config_file]
      file_values = file ? layer(DSL.load(file), cli_values) : {}
      values.merge!(EnvLayer.values(env, file_values.merge(cli_values), default_binds: default_binds))
      values.merge!(file_values)
      values.merge!(cli_values)
      values[:binds] = default_binds if default_binds && values[:binds].empty? && values[:port].nil?
      new(values, file_values.keys | cli_values.keys)
    end

    # The file's values without what the command line overrides: `-p 8080`
    # replaces the file's binds, as `-b` replaces its port.
    def self.layer(file_values, cli_values)
      return file_values unless LISTEN.any? { |name| cli_values.key?(name) }

      file_values.reject { |name, _| LISTEN.include?(name) }
    end
    private_class_method :layer

    # given: the options a layer set (the file or the command line), as
    # opposed to defaults; all of values when built directly. Positional, not
    # a keyword: Config.new(name: value) passes its options as one hash.
    def initialize(values, given = values.keys)
      @given = given - [:hooks]
      @hooks = values.delete(:hooks) || {}
      unknown = values.keys - BY_NAME.keys
      raise Error, "unknown option: #{unknown.join(', ')}" unless unknown.empty?

      values = OPTIONS.to_h { |o| [o.name, o.default_value] }.merge(values)
      values, notes = AutoSizing.auto?(values) ? AutoSizing.new.resolve(values) : [values, []]
      @values = values.freeze
      @sizing_notes = notes.freeze
      check_listen
    end

    # What each auto option was settled to and why, one log line each, for
    # the start (CLI, RackHandler).
    attr_reader :sizing_notes

    OPTIONS.each do |option|
      next if %i[binds drain_delay].include?(option.name) # defined below: their defaults depend on others

      define_method(option.name) { @values.fetch(option.name) }
    end

    def binds
      list = @values[:binds]
      return list unless list.empty?

      port ? ["tcp://0.0.0.0:#{port}"] : [DEFAULT_BIND]
    end

    # Without a health path no load balancer can see a stop coming, so
    # waiting would only delay it. With one, DEFAULT_DRAIN_DELAY (see
    # docs/DRAINING.md for the arithmetic).
    def drain_delay
      value = @values[:drain_delay]
      return value if value

      health_path ? DEFAULT_DRAIN_DELAY : 0.0
    end

    # Runs the blocks the config file gave for hook, with args.
    def run_hooks(hook, *args)
      @hooks.fetch(hook, []).each { |block| block.call(*args) }
    end

    def cluster? = workers.positive?

    # Whether the file or the command line set the option (Config::ClusterOnly).
    def given?(name) = @given.include?(name)

    def hook?(name) = @hooks.fetch(name, []).any?

    def min_threads = threads.first
    def max_threads = threads.last

    def parser_limits
      HTTP::Parser::LIMITS.to_h { |name| [name, @values[name]] }
    end

    def to_h = @values

    private

    # -p used to be dropped without a word when -b was given too. Both at once is
    # a mistake: which did the operator mean?
    def check_listen
      return if @values[:port].nil? || @values[:binds].empty?

      raise Error, "port #{@values[:port]} and bind #{@values[:binds].join(', ')} both given: " \
                   "give binds only (add -b tcp://0.0.0.0:#{@values[:port]} to listen on that port too)"
    end
  end
end
