# frozen_string_literal: true

require "socket"
require "json"
require "uri"
require "time"

module Spindle
  module Cluster
    # The control endpoint bin/spindlectl talks to: one JSON line in
    # ({"command": "stats", "token": "..."}), one JSON line out. A UNIX socket is
    # created with mode 0600 (only its owner may connect); TCP requires a token.
    # Commands are queued to the master loop like signals, so the master's state
    # is only ever touched from its own thread.
    class ControlServer
      COMMANDS = { "phased-restart" => :USR1, "hot-restart" => :USR2, "refork" => :REFORK,
                   "stop" => :TERM, "drain" => :QUIT, "gc" => :GC, "add-worker" => :TTIN,
                   "remove-worker" => :TTOU }.freeze

      def self.open(config, queue)
        new(config.control, config.control_token, queue).tap(&:start)
      end

      def initialize(uri, token, queue)
        @uri = URI.parse(uri)
        @token = token
        @queue = queue
        raise Config::Error, "a TCP control endpoint needs --control-token" if @uri.scheme == "tcp" && !token
      end

      # The listening socket, for forked workers to close.
      def io = @server

      def start
        @server = listen
        @thread = Thread.new { loop { serve(@server.accept) } }
      end

      # Removes the socket file only if it is still ours: after a hot restart
      # the new master has created its own at the same path.
      def close
        @thread&.kill
        @server&.close
        File.unlink(@path) if @path && File.socket?(@path) && File.stat(@path).ino == @inode
      rescue Errno::ENOENT
        nil
      end

      private

      def listen
        case @uri.scheme
        when "unix"
          @path = "#{@uri.host}#{@uri.path}"
          File.unlink(@path) if File.socket?(@path)
          old = File.umask(0o177) # the socket is created 0600
          server = UNIXServer.new(@path)
          File.umask(old)
          @inode = File.stat(@path).ino
          server
        when "tcp" then TCPServer.new(@uri.hostname, @uri.port)
        else raise Config::Error, "control endpoint must be unix://PATH or tcp://HOST:PORT"
        end
      end

      def serve(client)
        request = JSON.parse(client.gets.to_s)
        client.puts(JSON.generate(respond(request)))
      rescue JSON::ParserError
        client.puts(JSON.generate("error" => "send one JSON object per line"))
      rescue IOError, SystemCallError
        nil
      ensure
        client.close
      end

      def respond(request)
        return { "error" => "bad token" } if @token && request["token"] != @token

        command = request["command"]
        return ask(:stats) if command == "stats"

        signal = COMMANDS[command]
        return { "error" => "unknown command #{command.inspect}" } unless signal

        @queue.push(signal)
        { "ok" => command }
      end

      def ask(command)
        reply = Thread::Queue.new
        @queue.push([command, reply])
        reply.pop
      end
    end
  end
end
