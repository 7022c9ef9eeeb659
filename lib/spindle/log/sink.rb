# frozen_string_literal: true

module Spindle
  class Log
    # Where lines go: an IO the process was given (stdout, stderr), or a file
    # by path that #reopen opens afresh (logrotate moved the old one away).
    #
    # A file is opened for appending (O_APPEND): the master and its workers
    # share one open file until they reopen, and each write lands at the end,
    # whole, whichever process made it. Each line is one write call. The lock
    # orders a write against a reopen on another thread: without it a line
    # could go to a file just closed and be lost.
    class Sink
      attr_reader :path

      def self.open(path) = new(nil, path)

      def initialize(io, path = nil)
        @path = path
        @io = io || open_file
        @lock = Thread::Mutex.new
      end

      def write(text)
        @lock.synchronize do
          @io.write(text)
          @io.flush unless @path
        end
      rescue IOError, SystemCallError
        nil # a full disk or a closed pipe must not take the server down
      end

      # A given IO has nothing to reopen. Raises SystemCallError when the path
      # cannot be opened (the old file is kept: lines still go somewhere).
      def reopen
        return unless @path

        fresh = open_file
        old = @lock.synchronize do
          previous = @io
          @io = fresh
          previous
        end
        old.close unless old.closed?
      end

      private

      def open_file
        file = File.open(@path, File::WRONLY | File::APPEND | File::CREAT, 0o644)
        file.sync = true
        file
      end
    end
  end
end
