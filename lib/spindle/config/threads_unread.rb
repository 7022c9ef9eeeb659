# frozen_string_literal: true

module Spindle
  class Config
    # Until 2026-12-02 the threads option's MAX counted hybrid's loops; it now
    # sizes only the threads engine's pool. A command line (bin/spindle's, or
    # rackup's -O) written for the old meaning is told so once, not silently
    # run on the default loops. A config file's threads (an app's, sized for
    # the pool) is not: it is not in the values typed.
    module ThreadsUnread
      module_function

      # values: the options typed; threads and loops: how that interface
      # spells the two options. nil when there is nothing to say.
      def warning(values, config, threads:, loops:)
        return unless values.key?(:threads) && !values.key?(:loops) && config.engine.to_s == "hybrid"

        "spindle: #{threads} sizes the threads engine's pool; hybrid runs #{config.loops} loops " \
          "(set them with #{loops})"
      end
    end
  end
end
