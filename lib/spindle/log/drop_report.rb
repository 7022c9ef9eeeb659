# frozen_string_literal: true

require_relative "throttle"

module Spindle
  class Log
    # Says in the server log that the access log is losing lines (a full
    # disk, a closed pipe) and when it stops: an error at the first dropped
    # line, then at most one per EVERY seconds while lines are dropped, with
    # how many were dropped in between (Log::Throttle); and a warning with
    # the count once a line is written again. A Sink's watcher.
    class DropReport
      EVERY = 60

      # what: the log's name in the lines, e.g. "access log /var/log/a.log".
      def initialize(log, what, every = EVERY)
        @log = log
        @what = what
        @throttle = Throttle.new(log, every)
      end

      def dropped(_sink, error)
        @throttle.error("#{@what}: cannot write (#{reason(error)}): line dropped")
      end

      def recovered(_sink, count)
        @log.warn("#{@what}: written again, after #{count} dropped line(s)")
      end

      private

      # "No space left on device", without Ruby's "@ rb_io_syswrite - PATH".
      def reason(error)
        error.is_a?(SystemCallError) ? SystemCallError.new(nil, error.errno).message : error.message
      end
    end
  end
end
