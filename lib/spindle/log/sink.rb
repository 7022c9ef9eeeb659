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
    #
    # A line that cannot be written (a full disk, a closed pipe) is dropped,
    # never raised: the server keeps serving. It is counted (#dropped, for
    # the metrics), and the watcher, if any (Log::DropReport), is told of
    # each drop and of the first line written again after drops. Writing
    # again needs nothing but room: the next line is tried as any other.
    class Sink
      attr_reader :path

      def self.open(path, watcher: nil) = new(nil, path, watcher: watcher)

      # watcher: #dropped(sink, error) and #recovered(sink, count); nil: none
      # (the server log's own sinks: a report of their drops would go to them).
      def initialize(io, path = nil, watcher: nil)
        @path = path
        @io = io || open_file
        @watcher = watcher
        @lock = Thread::Mutex.new
        @dropped = 0 # since the process started
        @unwritten = 0 # dropped since the last line written
        @torn = false # a failed write left part of a line in the file
      end

      # Lines dropped since the process started.
      def dropped = @lock.synchronize { @dropped }

      # In a process just forked: its count starts from zero, as its other
      # counters do (a worker's drops are its own, not its parent's).
      def forked
        @lock.synchronize { @dropped = @unwritten = 0 }
      end

      # Writes one line: true when it was written, false when it was dropped.
      def write(text)
        error = nil
        recovered = @lock.synchronize do
          put(text)
          since = @unwritten
          @unwritten = 0
          since
        rescue IOError, SystemCallError => e
          error = e
          @dropped += 1
          @unwritten += 1
          0
        end
        report(error, recovered)
      end

      # A given IO has nothing to reopen. Raises SystemCallError when the path
      # cannot be opened (the old file is kept: lines still go somewhere).
      def reopen
        return unless @path

        fresh = open_file
        old = @lock.synchronize do
          previous = @io
          @io = fresh
          @torn = false # the part of a line is in the old file
          previous
        end
        old.close unless old.closed?
      end

      private

      # A given IO is written as it was given (stdout may hold the app's
      # buffered output); a file by path is this sink's alone: see #append.
      def put(text)
        return append(text) if @path

        @io.write(text)
        @io.flush
      end

      # On a full disk write(2) can take the part of a line that fits and
      # fail on the rest; IO#write would raise without saying how much went.
      # Written by syswrite instead, the part is known, and the next line
      # that is written starts with a newline: the part stays a line of its
      # own and every line after it is whole.
      def append(text)
        text = "\n#{text}" if @torn
        written = 0
        written += @io.syswrite(written.zero? ? text : text.byteslice(written..)) while written < text.bytesize
        @torn = false
      rescue SystemCallError
        @torn ||= written.positive?
        raise
      end

      def report(error, recovered)
        if error
          @watcher&.dropped(self, error)
          false
        else
          @watcher&.recovered(self, recovered) if recovered.positive?
          true
        end
      end

      def open_file
        file = File.open(@path, File::WRONLY | File::APPEND | File::CREAT, 0o644)
        file.sync = true
        file
      end
    end
  end
end
