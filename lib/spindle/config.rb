# frozen_string_literal: true

require_relative "config/options"
require_relative "config/dsl"

module Spindle
  # The settings one server runs with. Built from defaults, then the config file,
  # then command-line flags (each layer wins over the one before). Read-only once
  # built.
  class Config
    DEFAULT_BIND = "tcp://0.0.0.0:9292"

    def self.build(cli_values)
      values = OPTIONS.to_h { |o| [o.name, o.default_value] }
      file = cli_values[:config_file]
      values.merge!(DSL.load(file)) if file
      values.merge!(cli_values)
      new(values)
    end

    def initialize(values)
      @hooks = values.delete(:hooks) || {}
      unknown = values.keys - BY_NAME.keys
      raise Error, "unknown option: #{unknown.join(', ')}" unless unknown.empty?

      @values = OPTIONS.to_h { |o| [o.name, o.default_value] }.merge(values).freeze
    end

    OPTIONS.each do |option|
      next if option.name == :binds # defined below: it falls back to port or the default

      define_method(option.name) { @values.fetch(option.name) }
    end

    def binds
      list = @values[:binds]
      return list unless list.empty?

      port ? ["tcp://0.0.0.0:#{port}"] : [DEFAULT_BIND]
    end

    # Runs the blocks the config file gave for hook, with args.
    def run_hooks(hook, *args)
      @hooks.fetch(hook, []).each { |block| block.call(*args) }
    end

    def cluster? = workers.positive?

    def min_threads = threads.first
    def max_threads = threads.last

    def parser_limits
      PARSER_LIMITS.to_h { |name| [name, @values[name]] }
    end

    def to_h = @values
  end
end
