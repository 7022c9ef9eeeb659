# frozen_string_literal: true

require "socket"

module Spindle
  class SideEndpoint
    # The clients of a side endpoint whose request has not all arrived, read
    # by one thread that never waits on any one of them: it selects over the
    # listening socket and every waiting client, and reads whoever has sent
    # something. A client that connects and says nothing therefore costs a
    # descriptor and a buffer, never a thread or another client's turn.
    #
    # Waiting clients are bounded (capacity): one more drops the one that
    # has waited longest. An operator's spindlectl sends its line as it
    # connects, so a flood of silent connections pushes out only each other.
    # (Before, a thread per client and a pause on each one refused past the
    # cap let a crowd of silent clients keep `stats` unanswered while it lasted.)
    #
    # Each client leaves with an outcome, handed to deliver (a block:
    # client, outcome, bytes): :request (shape.complete says the bytes are a
    # whole request), :too_long (max_bytes arrived without one), :timeout
    # (seconds passed without one), :eof (the client closed; bytes may hold
    # a request without its terminator) or :dropped (pushed out). The block
    # owns the client from then on.
    class Reception
      # What a request is: at most max_bytes, complete within seconds of the
      # connection, and whole once complete.(bytes) says so.
      Shape = Struct.new(:max_bytes, :seconds, :complete, keyword_init: true)
      Arrival = Struct.new(:bytes, :deadline)

      ACCEPT_BURST = 64 # connections taken per turn, so waiting clients are read between bursts
      ACCEPT_BACKOFF = 0.1 # seconds without accepting when no descriptor is left, instead of spinning

      def initialize(server, shape, capacity:, &deliver)
        @server = server
        @shape = shape
        @capacity = capacity
        @deliver = deliver
        @waiting = {} # client => Arrival, the longest waiting first (a Hash keeps insertion order)
        @paused_until = nil
      end

      # Until the listening socket is closed, or the thread is killed; the
      # clients still waiting are closed then.
      def run
        loop { turn }
      rescue IOError
        nil # the listening socket was closed
      ensure
        @waiting.each_key { |client| client.close unless client.closed? }
        @waiting.clear
      end

      def waiting = @waiting.size

      private

      def turn
        readable, = IO.select(watched, nil, nil, wait_time)
        readable&.each { |io| io.equal?(@server) ? accept_burst : read(io) }
        expire
      end

      def watched
        listening = @paused_until.nil? || now >= @paused_until
        @paused_until = nil if listening
        listening ? [@server, *@waiting.keys] : @waiting.keys
      end

      # Until the first deadline or the end of a pause; nil: until something arrives.
      def wait_time
        times = [@waiting.first&.last&.deadline, @paused_until].compact
        times.empty? ? nil : [times.min - now, 0].max
      end

      def accept_burst
        ACCEPT_BURST.times do
          client = @server.accept_nonblock(exception: false)
          return if client == :wait_readable

          admit(client)
        end
      rescue Errno::ECONNABORTED, Errno::EPROTO, Errno::EINTR
        nil # the client gave up before we took it
      rescue Errno::EMFILE, Errno::ENFILE, Errno::ENOBUFS, Errno::ENOMEM
        @paused_until = now + ACCEPT_BACKOFF
      end

      def admit(client)
        leave(@waiting.first.first, :dropped) if @waiting.size >= @capacity
        @waiting[client] = Arrival.new(String.new(encoding: Encoding::BINARY), now + @shape.seconds)
      end

      def read(client)
        arrival = @waiting[client]
        chunk = client.read_nonblock(@shape.max_bytes - arrival.bytes.bytesize, exception: false)
        return if chunk == :wait_readable
        return leave(client, :eof) if chunk.nil?

        arrival.bytes << chunk
        outcome = outcome_of(arrival.bytes)
        leave(client, outcome) if outcome
      rescue SystemCallError, IOError
        @waiting.delete(client)
        client.close # reset or broken: there is no one to answer
      end

      def outcome_of(bytes)
        return :request if @shape.complete.call(bytes)

        :too_long if bytes.bytesize >= @shape.max_bytes
      end

      # Deadlines come in arrival order: the expired ones lead the Hash.
      def expire
        time = now
        leave(@waiting.first.first, :timeout) while @waiting.any? && @waiting.first.last.deadline <= time
      end

      # A client that closed having sent nothing needs no answer.
      def leave(client, outcome)
        bytes = @waiting.delete(client).bytes
        return client.close if outcome == :eof && bytes.empty?

        @deliver.call(client, outcome, bytes)
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
