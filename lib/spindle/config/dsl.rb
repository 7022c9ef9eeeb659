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

      # Lifecycle hooks: blocks run at the moments their descriptions say. Each
      # may be given more than once; they run in order. The descriptions are
      # printed in docs/CONFIG.md, and the names in `bin/spindle -h`.
      Hook = Struct.new(:name, :block_args, :doc, keyword_init: true)
      HOOKS = [
        Hook.new(name: :before_fork, block_args: "",
                 doc: "In the master, before it forks each worker of generation 0 " \
                      "(at start, and to replace one). Close connections the master opened " \
                      "so workers do not share them."),
        Hook.new(name: :after_worker_fork, block_args: "|index|",
                 doc: "In each worker of generation 0, after the fork and before it serves; " \
                      "index is its slot (0 to workers - 1). Open per-process connections here."),
        Hook.new(name: :before_refork, block_args: "",
                 doc: "In the mold (the warmed worker a refork forks from), before it warms its " \
                      "heap and forks the new generation. Close the app's connections here."),
        Hook.new(name: :after_refork, block_args: "|index|",
                 doc: "In each worker forked from a mold (generation 1 and later), after the " \
                      "fork and before it serves; index is its slot."),
      ].freeze

      HOOKS.map(&:name).each do |hook|
        define_method(hook) do |&block|
          raise Error, "#{hook} needs a block" unless block

          (@values[:hooks] ||= Hash.new { |h, k| h[k] = [] })[hook] << block
        end
      end

      # bind may be given several times; each call adds a listener.
      def bind(uri)
        (@values[:binds] ||= []) << uri.to_s
      end

      # sidecar "bin/jobs", name: "solid_queue": each call adds a command the
      # server keeps running beside it (the sidecars option).
      def sidecar(command, name: nil)
        (@values[:sidecars] ||= []).concat(BY_NAME.fetch(:sidecars).value([{ command: command, name: name }]))
      end
    end
  end
end
