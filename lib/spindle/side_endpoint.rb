# frozen_string_literal: true

require "socket"
require "uri"
require_relative "config"
require_relative "listener"
require_relative "side_endpoint/reception"

module Spindle
  # A small listener beside the app's, served by threads of its own, never by
  # an engine: the control endpoint (Cluster::ControlServer) and the metrics
  # endpoint (Metrics::Endpoint). One thread receives (Reception): it accepts,
  # and reads every client's request without waiting on any one of them, at
  # most WAITING clients at once (one more drops the longest waiting). A
  # client whose request has arrived gets a thread (#session), at most
  # max_clients at once; one past the cap is sent #busy and closed. A silent
  # client therefore holds no thread and no other client's turn, a stuck one
  # holds one slot, never the app, and a full app never holds these.
  #
  # A subclass names itself (#kind, for messages), says what a request is
  # (#request_shape), and defines #session and #busy; it may prepare a UNIX
  # socket path (#prepare_unix_path) and create the socket private to its
  # owner (#private_socket?).
  class SideEndpoint
    WAITING = 64 # clients whose request has not all arrived

    # Public: the listening socket (a forked worker closes this, not #close,
    # which would unlink the socket file its parent still serves on), and
    # where it listens, with the port the kernel chose for port 0.
    attr_reader :io, :uri

    # Writes all of data to a client's socket, giving up quietly after
    # seconds: a client that reads nothing cannot hold its session's thread.
    def self.write_within(socket, data, seconds)
      limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      until data.empty?
        written = socket.write_nonblock(data, exception: false)
        if written == :wait_writable
          remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          return if remaining <= 0 || !socket.wait_writable(remaining)
        else
          data = data.byteslice(written..)
        end
      end
    end

    # Reads up to size bytes from a client's socket, waiting until limit (a
    # monotonic time): the bytes, nil at the end of the stream, or :timeout.
    def self.read_before(socket, size, limit)
      loop do
        chunk = socket.read_nonblock(size, exception: false)
        return chunk unless chunk == :wait_readable

        remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return :timeout if remaining <= 0 || !socket.wait_readable(remaining)
      end
    end

    def initialize(uri, max_clients:, waiting: WAITING)
      @name = uri # as the operator wrote it: URI#to_s turns unix:///x into unix:/x
      @parsed = parse_uri(uri)
      @max_clients = max_clients
      @waiting = waiting
      @sessions = []
      @lock = Mutex.new
    end

    # Raises Listener::Error, naming the endpoint, when it cannot listen.
    def start
      @io = listen
      @uri = bound_uri
      @reception = Reception.new(@io, request_shape, capacity: @waiting) { |*arrived| answer(*arrived) }
      @thread = Thread.new { @reception.run }
      self
    end

    # Removes the socket file only if it is still ours: after a hot restart
    # the new master has created its own at the same path.
    def close
      @thread&.kill&.join # the reception closes the clients still waiting
      @lock.synchronize { @sessions.dup }.each(&:kill)
      @io.close if @io && !@io.closed?
      File.unlink(@path) if @path && File.socket?(@path) && File.stat(@path).ino == @inode
    rescue Errno::ENOENT
      nil
    end

    private

    def tcp? = @parsed.scheme == "tcp"

    def parse_uri(uri)
      parsed = URI.parse(uri)
      return parsed if parsed.scheme == "unix" || (parsed.scheme == "tcp" && (0..65_535).cover?(parsed.port))

      raise Config::Error, "#{kind} must be unix://PATH or tcp://HOST:PORT (port 0-65535), got #{uri}"
    rescue URI::InvalidURIError
      raise Config::Error, "invalid #{kind} #{uri.inspect}"
    end

    def listen
      @parsed.scheme == "unix" ? listen_unix : TCPServer.new(@parsed.hostname, @parsed.port)
    rescue Errno::EADDRINUSE, Listener::Error
      raise Listener::Error, "#{kind} #{@name}: address already in use"
    rescue SystemCallError, SocketError => e
      reason = e.message.split(" - ", 2).first # without Ruby's "- bind(2) for ...", which names the call
      raise Listener::Error, "#{kind} #{@name}: cannot listen: #{reason}"
    end

    def listen_unix
      @path = "#{@parsed.host}#{@parsed.path}"
      prepare_unix_path(@path)
      old = File.umask(0o177) if private_socket? # created 0600: only its owner may connect
      begin
        server = UNIXServer.new(@path)
      ensure
        File.umask(old) if old
      end
      @inode = File.stat(@path).ino
      server
    end

    # A socket file a live process answers on is not taken over (it may be
    # the app's); one left by a dead process is.
    def prepare_unix_path(path) = Listener.remove_stale_socket(path)

    def private_socket? = false

    def bound_uri
      return "unix://#{@path}" if @path

      host = @parsed.hostname.include?(":") ? "[#{@parsed.hostname}]" : @parsed.hostname
      "tcp://#{host}:#{@io.local_address.ip_port}"
    end

    # A client whose request arrived (or whose time ran out) gets a session
    # thread if one is free; else, or when the reception dropped it, #busy.
    # Holding the lock while starting the thread: its own removal from
    # @sessions waits until it has been added.
    def answer(client, outcome, bytes)
      return turn_away(client) if outcome == :dropped

      @lock.synchronize do
        return turn_away(client) if @sessions.size >= @max_clients

        @sessions << Thread.new { serve(client, outcome, bytes) }
      end
    end

    def serve(client, outcome, bytes)
      session(client, outcome, bytes)
    ensure
      @lock.synchronize { @sessions.delete(Thread.current) }
    end

    # #busy writes what fits an empty socket buffer, never waiting. A client
    # turned away at the cap had its request read whole, so closing sends no
    # reset over the answer; one dropped while still sending may lose it.
    def turn_away(client)
      busy(client)
    rescue SystemCallError, IOError
      nil
    ensure
      client.close
    end
  end
end
