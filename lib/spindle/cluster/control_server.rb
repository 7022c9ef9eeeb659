# frozen_string_literal: true

require "digest"
require "json"
require "socket"
require "uri"
require_relative "../config"
require_relative "../listener"
require_relative "control_session"

module Spindle
  module Cluster
    # The control endpoint bin/spindlectl talks to: one JSON line in
    # ({"command": "stats", "token": "..."}), one JSON line out. A UNIX socket is
    # created with mode 0600 (only its owner may connect); TCP requires a token.
    # Commands are queued to the master loop like signals, so the master's state
    # is only ever touched from its own thread.
    #
    # One thread accepts; each client gets its own thread (ControlSession), at
    # most MAX_CLIENTS at once, each with its own deadlines. A client past the
    # cap is told the endpoint is busy and closed; a silent client holds its
    # slot for one read deadline at most.
    class ControlServer
      COMMANDS = ControlSession::COMMANDS
      MAX_CLIENTS = 8
      ACCEPT_BACKOFF = 0.1 # seconds to wait when no descriptor is left, instead of spinning

      # Public: the listening socket. A forked worker closes this, not #close,
      # which would unlink the socket file the master still serves on.
      attr_reader :io

      def self.open(config, queue)
        new(config.control, config.control_token, queue).tap(&:start)
      end

      # queue: anything with #push (the master's SignalQueue): it receives
      # signal names, and [:stats, reply] for the master loop to fill.
      def initialize(uri, token, queue, limits: ControlSession::LIMITS, max_clients: MAX_CLIENTS)
        @name = uri # as the operator wrote it: URI#to_s turns unix:///x into unix:/x
        @uri = parse_uri(uri)
        raise Config::Error, "a TCP control endpoint needs --control-token" if @uri.scheme == "tcp" && !token

        @token_digest = token && Digest::SHA256.digest(token)
        @queue = queue
        @limits = limits
        @max_clients = max_clients
        @sessions = []
        @lock = Mutex.new
      end

      # Raises Listener::Error, naming the control endpoint, when it cannot listen.
      def start
        @io = listen
        @thread = Thread.new { accept_loop }
        self
      end

      # Removes the socket file only if it is still ours: after a hot restart
      # the new master has created its own at the same path.
      def close
        @thread&.kill
        @lock.synchronize { @sessions.dup }.each(&:kill)
        @io.close if @io && !@io.closed?
        File.unlink(@path) if @path && File.socket?(@path) && File.stat(@path).ino == @inode
      rescue Errno::ENOENT
        nil
      end

      private

      def parse_uri(uri)
        parsed = URI.parse(uri)
        return parsed if parsed.scheme == "unix" || (parsed.scheme == "tcp" && (0..65_535).cover?(parsed.port))

        raise Config::Error, "control endpoint must be unix://PATH or tcp://HOST:PORT (port 0-65535), got #{uri}"
      rescue URI::InvalidURIError
        raise Config::Error, "invalid control endpoint #{uri.inspect}"
      end

      def listen
        @uri.scheme == "unix" ? listen_unix : TCPServer.new(@uri.hostname, @uri.port)
      rescue Errno::EADDRINUSE, Listener::Error
        raise Listener::Error, "control endpoint #{@name}: address already in use"
      rescue SystemCallError, SocketError => e
        reason = e.message.split(" - ", 2).first # without Ruby's "- connect(2) for PATH", which names the wrong call
        raise Listener::Error, "control endpoint #{@name}: cannot listen: #{reason}"
      end

      def listen_unix
        @path = "#{@uri.host}#{@uri.path}"
        take_over_path
        old = File.umask(0o177) # the socket is created 0600
        begin
          server = UNIXServer.new(@path)
        ensure
          File.umask(old)
        end
        @inode = File.stat(@path).ino
        server
      end

      # A socket file a live server answers on is not ours to take (it may be
      # the app's own listener), except our parent's: after a hot restart the
      # new master takes the control path over from the master that started it.
      def take_over_path
        return File.unlink(@path) if parent_listens_on?(@path)

        Listener.remove_stale_socket(@path)
      end

      # SO_PEERCRED names the process that created the listening socket (Linux).
      def parent_listens_on?(path)
        return false unless File.socket?(path)

        UNIXSocket.open(path) { |s| s.getsockopt(:SOCKET, :PEERCRED).data.unpack1("i") == Process.ppid }
      rescue SystemCallError, SocketError
        false
      end

      def accept_loop
        loop do
          admit(@io.accept)
        rescue Errno::ECONNABORTED, Errno::EPROTO, Errno::EINTR
          next # the client gave up before we took it
        rescue Errno::EMFILE, Errno::ENFILE, Errno::ENOBUFS, Errno::ENOMEM
          sleep ACCEPT_BACKOFF
        rescue IOError
          break # closed
        end
      end

      # Holding the lock while starting the thread: its own removal from
      # @sessions waits until it has been added.
      def admit(client)
        @lock.synchronize do
          return refuse(client) if @sessions.size >= @max_clients

          @sessions << Thread.new { serve(client) }
        end
      end

      def serve(client)
        ControlSession.new(client, token_digest: @token_digest, queue: @queue, limits: @limits).run
      ensure
        @lock.synchronize { @sessions.delete(Thread.current) }
      end

      # Never blocks: the answer fits an empty socket buffer, and a client that
      # cannot take it loses it.
      def refuse(client)
        message = JSON.generate("error" => "busy: #{@max_clients} control clients are connected; try again")
        client.write_nonblock("#{message}\n", exception: false)
      rescue SystemCallError, IOError
        nil
      ensure
        client.close
      end
    end
  end
end
