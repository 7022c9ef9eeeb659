# frozen_string_literal: true

require "socket"
require "uri"
require_relative "../config"
require_relative "../listener"
require_relative "exchange"

module Spindle
  module Metrics
    # The listener of --metrics: tcp://HOST:PORT or unix://PATH, served by
    # threads of its own, never by the app's engine, so a slow or stuck scrape
    # never holds a request and a full app never holds a scrape. One thread
    # accepts; each scrape gets a thread (Exchange), at most MAX_CLIENTS at
    # once; one past the cap is answered 503 without waiting and closed.
    class Endpoint
      MAX_CLIENTS = 4
      ACCEPT_BACKOFF = 0.1 # seconds to wait when no descriptor is left, instead of spinning
      BUSY = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n" \
             "connection: close\r\n\r\nbusy\n"

      # Public: the listening socket (a forked worker closes it), and where it
      # listens, with the port the kernel chose for port 0.
      attr_reader :io, :uri

      # source: #call returns the exposition text, or nil (see Exchange).
      def initialize(uri, source:, limits: Exchange::LIMITS, max_clients: MAX_CLIENTS)
        @name = uri
        @parsed = parse_uri(uri)
        @source = source
        @limits = limits
        @max_clients = max_clients
        @sessions = []
        @lock = Mutex.new
      end

      # Raises Listener::Error, naming the endpoint, when it cannot listen.
      def start
        @io = listen
        @uri = bound_uri
        @thread = Thread.new { accept_loop }
        self
      end

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

        raise Config::Error, "metrics endpoint must be unix://PATH or tcp://HOST:PORT (port 0-65535), got #{uri}"
      rescue URI::InvalidURIError
        raise Config::Error, "invalid metrics endpoint #{uri.inspect}"
      end

      def listen
        @parsed.scheme == "unix" ? listen_unix : TCPServer.new(@parsed.hostname, @parsed.port)
      rescue Errno::EADDRINUSE, Listener::Error
        raise Listener::Error, "metrics endpoint #{@name}: address already in use"
      rescue SystemCallError, SocketError => e
        reason = e.message.split(" - ", 2).first # without Ruby's "- bind(2) for ...", which repeats the address
        raise Listener::Error, "metrics endpoint #{@name}: cannot listen: #{reason}"
      end

      # A socket file a live process answers on is not taken over (it may be
      # the app's); one left by a dead process is.
      def listen_unix
        @path = "#{@parsed.host}#{@parsed.path}"
        Listener.remove_stale_socket(@path)
        server = UNIXServer.new(@path)
        @inode = File.stat(@path).ino
        server
      end

      def bound_uri
        return "unix://#{@path}" if @path

        host = @parsed.hostname.include?(":") ? "[#{@parsed.hostname}]" : @parsed.hostname
        "tcp://#{host}:#{@io.local_address.ip_port}"
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
        Exchange.new(client, source: @source, limits: @limits).run
      ensure
        @lock.synchronize { @sessions.delete(Thread.current) }
      end

      # Never blocks: the answer fits an empty socket buffer, and a client that
      # cannot take it loses it. The request already there is read first:
      # closing over unread input would reset the connection and lose the 503.
      def refuse(client)
        client.read_nonblock(Exchange::LIMITS.max_head, exception: false)
        client.write_nonblock(BUSY, exception: false)
      rescue SystemCallError, IOError
        nil
      ensure
        client.close
      end
    end
  end
end
