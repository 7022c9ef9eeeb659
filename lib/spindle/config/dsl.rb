# frozen_string_literal: true

require_relative "options"

module Spindle
  class Config
    # The config file language: one method per option, named after it.
    #
    #   bind "tcp://127.0.0.1:8080"
    #   bind "unix:///run/app.sock"
    #   engine :threads
    #   threads 2, 16
    #   max_body 10 * 1024 * 1024
    #
    # The file is plain Ruby evaluated in an instance of this class.
    class DSL
      def self.load(path)
        raise Error, "config file not found: #{path}" unless File.file?(path)

        dsl = new
        dsl.instance_eval(File.read(path), path, 1)
        dsl.values
      rescue Error
        raise
      rescue StandardError, ScriptError => e
        raise Error, "config file #{path}: #{e.class}: #{e.message}"
      end

      attr_reader :values

      def initialize
        @values = {}
      end

      OPTIONS.each do |option|
        next if option.name == :config_file

        define_method(option.name) do |*args|
          raw = args.length > 1 ? args : args.fetch(0, true)
          @values[option.name] = option.value(raw)
        end
      end

      # Lifecycle hooks: blocks run at the moments their names say. Each may be
      # given more than once; they run in order.
      #   before_fork { }              master, before forking workers
      #   after_worker_fork { |i| }    each worker, after it is forked (i: its index)
      #   before_refork { }            the mold, before it forks a new generation
      #   after_refork { |i| }         each worker of a new generation
      HOOKS = %i[before_fork after_worker_fork before_refork after_refork].freeze

      HOOKS.each do |hook|
        define_method(hook) do |&block|
          raise Error, "#{hook} needs a block" unless block

          (@values[:hooks] ||= Hash.new { |h, k| h[k] = [] })[hook] << block
        end
      end

      # bind may be given several times; each call adds a listener.
      def bind(uri)
        (@values[:binds] ||= []) << uri.to_s
      end
    end
  end
end
