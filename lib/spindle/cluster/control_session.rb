# frozen_string_literal: true

require "digest"
require "io/wait"
require "json"
require_relative "../side_endpoint"

module Spindle
  module Cluster
    # One control client, served on its own thread once its request line has
    # arrived (SideEndpoint::Reception reads it, bounded by max_line and
    # read_deadline): one JSON line out, then the connection is closed. Every
    # step is bounded, so a client that sends nothing, sends without end,
    # sends garbage or vanishes costs a few seconds and max_line bytes, and
    # nothing else: it cannot stop the endpoint, hold up other clients, or
    # grow the master.
    class ControlSession
      # A command's name => what is queued for it; a String instead refuses
      # the command with that reason (SingleControl's, for those that need
      # workers).
      COMMANDS = { "phased-restart" => :USR1, "hot-restart" => :USR2, "refork" => :REFORK,
                   "stop" => :TERM, "drain" => :QUIT, "gc" => :GC, "add-worker" => :TTIN,
                   "remove-worker" => :TTOU, "reopen" => :HUP }.freeze
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
      def initialize(socket, token_digest:, queue:, limits: LIMITS, commands: COMMANDS)
        @socket = socket
        @token_digest = token_digest
        @queue = queue
        @limits = limits
        @commands = commands
      end

      # What a request is to the reception: one line.
      def self.request_shape(limits)
        SideEndpoint::Reception::Shape.new(max_bytes: limits.max_line, seconds: limits.read_deadline,
                                           complete: ->(bytes) { bytes.include?("\n") })
      end

      # outcome, bytes: how the request arrived (SideEndpoint::Reception).
      # Never raises: whatever the client does ends here, with the socket closed.
      def run(outcome, bytes)
        case outcome
        when :request then write_reply(answer(bytes.byteslice(0, bytes.index("\n"))))
        when :eof then write_reply(answer(bytes)) # `nc` without a final newline
        when :too_long then write_reply(error("a request line is at most #{@limits.max_line} bytes"))
        when :timeout then write_reply(error("no request line within #{@limits.read_deadline}s"))
        end
      rescue StandardError
        nil # EPIPE, ECONNRESET, bad bytes: the client is gone or lost; the endpoint carries on
      ensure
        @socket.close unless @socket.closed?
      end

      private

      # The line is parsed only to find the token: nothing is queued or asked
      # of the master before the token matches.
      def answer(line)
        request = parse(line)
        return error(NOT_AN_OBJECT) unless request.is_a?(Hash)
        return error("bad token") unless authorized?(request["token"])

        command = request["command"]
        return ask(:stats) if command == "stats"

        signal = @commands[command]
        return error("unknown command #{command.inspect}") unless signal
        return error(signal) if signal.is_a?(String)

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
