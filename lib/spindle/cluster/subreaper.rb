# frozen_string_literal: true

require_relative "../boot/native"

module Spindle
  module Cluster
    # Linux: makes the master the "child subreaper" of its descendants, so
    # workers forked by the mold (grandchildren) are reparented to the master,
    # which reaps and supervises them, rather than to init.
    module Subreaper
      module_function

      # Whether the master is now the subreaper: false off Linux, without the
      # extension (set_child_subreaper is ext/spindle/subreaper.c's), or when
      # prctl refuses (its errno is not worth stopping the master for: this
      # returned false before, too).
      def enable
        return false unless Native.extension_loaded? && respond_to?(:set_child_subreaper)

        set_child_subreaper
      rescue SystemCallError
        false
      end
    end
  end
end
