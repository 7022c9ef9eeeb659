# frozen_string_literal: true

require "fiddle"

module Spindle
  module Cluster
    # Linux: makes the master the "child subreaper" of its descendants, so
    # workers forked by the mold (grandchildren) are reparented to the master,
    # which reaps and supervises them, rather than to init.
    module Subreaper
      PR_SET_CHILD_SUBREAPER = 36

      module_function

      def enable
        return false unless RUBY_PLATFORM.include?("linux")

        prctl = Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"],
                                     [Fiddle::TYPE_INT, Fiddle::TYPE_LONG, Fiddle::TYPE_LONG,
                                      Fiddle::TYPE_LONG, Fiddle::TYPE_LONG], Fiddle::TYPE_INT)
        prctl.call(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0).zero?
      rescue Fiddle::DLError
        false
      end
    end
  end
end
