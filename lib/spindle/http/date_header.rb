# frozen_string_literal: true

module Spindle
  module HTTP
    # The "date:" line, formatted at most once a second rather than per response.
    # Shared by threads: a race only formats the same second twice.
    class DateHeader
      def initialize
        @second = nil
        @line = nil
      end

      def line
        now = Process.clock_gettime(Process::CLOCK_REALTIME, :second)
        return @line if now == @second

        @line = "date: #{Time.at(now).utc.strftime('%a, %d %b %Y %H:%M:%S GMT')}\r\n".freeze
        @second = now
        @line
      end
    end
  end
end
