# frozen_string_literal: true

require_relative "options"

module Spindle
  class Config
    # Options and hooks that act on a cluster's workers, and so do nothing in
    # a process serving alone. They used to be ignored there without a word:
    # an operator who set --worker-timeout believed something watched the
    # process. One warning each at start says so, and why.
    module ClusterOnly
      module_function

      OPTIONS = {
        worker_timeout: "it is how a master kills a worker that hangs; nothing watches a process alone " \
                        "(under systemd, WatchdogSec= does: docs/DEPLOY.md)",
        refork_after: "it forks new workers from a warmed one; a process alone forks none",
      }.freeze

      HOOKS = {
        before_fork: "it runs in a master before it forks a worker",
        after_worker_fork: "it runs in a worker after the fork",
        before_refork: "it runs in the worker a refork forks from",
        after_refork: "it runs in a worker forked by a refork",
      }.freeze

      # The warning lines for config, empty in a cluster or when none applies.
      def warnings(config)
        return [] if config.cluster?

        options = OPTIONS.filter_map { |name, why| option_line(name, why) if config.given?(name) }
        hooks = HOOKS.filter_map do |name, why|
          "the #{name} hook does nothing without workers (-w N): #{why}; alone, put its code where the app boots" \
            if config.hook?(name)
        end
        options + hooks
      end

      def option_line(name, why)
        flag = BY_NAME.fetch(name).flag&.last
        "#{name}#{" (#{flag})" if flag} does nothing without workers (-w N): #{why}"
      end
    end
  end
end
