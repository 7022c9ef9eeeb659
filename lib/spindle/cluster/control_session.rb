# frozen_string_literal: true

require "digest"
require "io/wait"
require "json"
require_relative "../side_endpoint"

module Spindle
  module Cluster
    # One control client, served on its own thread: one request line in, one
    # JSON line out, then the connection is closed. Every step is bounded, so a
    # client that sends nothing, sends without end, sends garbage or vanishes
    # costs one thread for a few seconds and MAX_LINE bytes, and nothing else:
    # it cannot stop the endpoint, hold up other clients, or grow the master.
    class ControlSession
      COMMANDS = { "phased-restart" => :USR1, "hot-restart" => :USR2, "refork" => :REFORK,
                   "stop" => :TERM, "drain" => :QUIT, "gc" => :GC, "add-worker" => :TTIN,
                   "remove-worker" => :TTOU }.freeze
      # Commands the master may refuse: the client waits for the master's
      # answer, which says why (a refork under way, the last worker).
      ASKED = %w[refork remove-worker].freeze

      # max_line: bytes a request may take, its newline included.
      # read_deadline: seconds from the connection to its complete request line.
      # reply_deadline: seconds the master loop may take to answer stats.
      # write_deadline: seconds the client may take to read the answer.
      Limits = Struct.new(:max_line, :read_deadline, :reply_deadline, :write_deadline, keyword_init: true)
      LIMITS = Limits.new(max_line: 4096, read_deadline: 5, reply_deadline: 10, write_deadline: 5).freeze

      NOT_AN_OBJECT = "send one JSON object per line, e.g. {\"command\":\"stats\"}"

      # The answer to a command that wants one ([:stats, reply]). The master
      # loop fills it with <<; the session waits for it with a deadline, so a
      # busy or stopped master costs the client an error, not a hang.
      # (Thread::Queue#pop takes a timeout only from Ruby 3.2 on.)
      class Reply
        def initialize
          @lock = Mutex.new
          @filled = ConditionVariable.new
          @value = nil
        end

        def <<(value)
          @lock.synchronize do
            @value = value
            @filled.broadcast
          end
          self
        end

        # The value, or nil if none came within +seconds+.
        def wait(seconds)
          limit = ControlSession.now + seconds
          @lock.synchronize do
            until @value
              remaining = limit - ControlSession.now
              return nil if remaining <= 0

              @filled.wait(@lock, remaining)
            end
            @value
          end
        end
      end

      def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # token_digest: SHA-256 of the token, or nil when none is required.
      def initialize(socket, token_digest:, queue:, limits: LIMITS)
        @socket = socket
        @token_digest = token_digest
        @queue = queue
        @limits = limits
      end

      # Never raises: whatever the client does ends here, with the socket closed.
      def run
        outcome, line = read_request
        case outcome
        when :line then write_reply(answer(line))
        when :too_long then write_reply(error("a request line is at most #{@limits.max_line} bytes"))
        when :timeout then write_reply(error("no request line within #{@limits.read_deadline}s"))
        end
      rescue StandardError
        nil # EPIPE, ECONNRESET, bad bytes: the client is gone or lost; the endpoint carries on
      ensure
        @socket.close unless @socket.closed?
      end

      private

      # [:line, text], [:too_long], [:timeout] or [:eof]. Reads at most
      # max_line bytes, so a client streaming without a newline is cut off
      # there instead of growing a buffer.
      def read_request
        buffer = String.new(encoding: Encoding::BINARY)
        limit = ControlSession.now + @limits.read_deadline
        loop do
          newline = buffer.index("\n")
          return [:line, buffer.byteslice(0, newline)] if newline
          return [:too_long] if buffer.bytesize >= @limits.max_line

          chunk = read_some(@limits.max_line - buffer.bytesize, limit)
          return [:timeout] if chunk == :timeout
          return buffer.empty? ? [:eof] : [:line, buffer] if chunk.nil? # `nc` without a final newline

          buffer << chunk
        end
      end

      def read_some(size, limit) = SideEndpoint.read_before(@socket, size, limit)

      # The line is parsed only to find the token: nothing is queued or asked
      # of the master before the token matches.
      def answer(line)
        request = parse(line)
        return error(NOT_AN_OBJECT) unless request.is_a?(Hash)
        return error("bad token") unless authorized?(request["token"])

        command = request["command"]
        return ask(:stats) if command == "stats"

        signal = COMMANDS[command]
        return error("unknown command #{command.inspect}") unless signal

        return outcome(command, signal) if ASKED.include?(command)

        @queue.push(signal)
        { "ok" => command }
      end

      # The master answers {} when it has done it, or {"error" => why not}.
      def outcome(command, signal)
        result = ask(signal)
        result.empty? ? { "ok" => command } : result
      end

      def parse(line)
        JSON.parse(line, max_nesting: 4)
      rescue JSON::ParserError
        nil
      end

      # Compares digests, so the time taken says nothing about how much of the
      # token a guess got right.
      def authorized?(token)
        return true unless @token_digest

        token.is_a?(String) && Digest::SHA256.digest(token) == @token_digest
      end

      def ask(command)
        reply = Reply.new
        @queue.push([command, reply])
        reply.wait(@limits.reply_deadline) ||
          error("the master did not answer within #{@limits.reply_deadline}s")
      end

      def error(message) = { "error" => message }

      # Gives up quietly past write_deadline (SideEndpoint.write_within).
      def write_reply(reply)
        SideEndpoint.write_within(@socket, "#{JSON.generate(reply)}\n".b, @limits.write_deadline)
      end
    end
  end
end
