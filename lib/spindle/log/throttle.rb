# frozen_string_literal: true

module Spindle
  class Log
    # One kind of line that the network can cause at any rate (a scanner on
    # a PROXY bind, requests shed under load): logged the first time, then at
    # most once per `every` seconds, saying how many were not logged in
    # between. Thread-safe.
    class Throttle
      def initialize(log, every)
        @log = log
        @every = every
        @lock = Mutex.new
        @unlogged = 0
        @logged_at = nil
      end

      def error(line) = emit(:error, line)

      def warn(line) = emit(:warn, line)

      private

      def emit(level, line)
        @lock.synchronize do
          now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          next @unlogged += 1 if @logged_at && now - @logged_at < @every

          more = @unlogged.positive? ? " (#{@unlogged} more since the last line)" : ""
          @log.public_send(level, "#{line}#{more}")
          @logged_at = now
          @unlogged = 0
        end
      end
    end
  end
end
