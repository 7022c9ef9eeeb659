# frozen_string_literal: true

require "digest"
require "json"
require_relative "../side_endpoint"
require_relative "control_session"

module Spindle
  module Cluster
    # The control endpoint bin/spindlectl talks to (a cluster's master, or a
    # process alone through SingleControl): one JSON line in
    # ({"command": "stats", "token": "..."}), one JSON line out. A UNIX socket is
    # created with mode 0600 (only its owner may connect); TCP requires a token.
    # Commands are queued to the master loop like signals, so the master's state
    # is only ever touched from its own thread.
    #
    # One thread reads every client's request line without waiting on any
    # one of them (SideEndpoint::Reception); a client whose line has arrived
    # gets its own thread (ControlSession), at most MAX_CLIENTS at once, each
    # with its own deadlines. A client past the cap is told the endpoint is
    # busy and closed. A silent client holds no thread: only one of the
    # WAITING places, until its read deadline or until newer clients push it
    # out, so an operator's call gets through whatever idle clients do.
    class ControlServer < SideEndpoint
      COMMANDS = ControlSession::COMMANDS
      MAX_CLIENTS = 8

      def self.open(config, queue)
        new(config.control, config.control_token, queue).tap(&:start)
      end

      # queue: anything with #push (the master's SignalQueue): it receives
      # signal names, and [:stats, reply] for the master loop to fill.
      # commands: ControlSession::COMMANDS, or a process alone's (SingleControl).
      def initialize(uri, token, queue, limits: ControlSession::LIMITS, max_clients: MAX_CLIENTS,
                     commands: COMMANDS)
        super(uri, max_clients: max_clients)
        raise Config::Error, "a TCP control endpoint needs --control-token" if tcp? && !token

        @token_digest = token && Digest::SHA256.digest(token)
        @queue = queue
        @limits = limits
        @commands = commands
      end

      private

      def kind = "control endpoint"
      def private_socket? = true

      # A socket file a live server answers on is not ours to take (it may be
      # the app's own listener), except our parent's: after a hot restart the
      # new master takes the control path over from the master that started it.
      def prepare_unix_path(path)
        return File.unlink(path) if parent_listens_on?(path)

        super
      end

      # SO_PEERCRED names the process that created the listening socket (Linux).
      def parent_listens_on?(path)
        return false unless File.socket?(path)

        UNIXSocket.open(path) { |s| s.getsockopt(:SOCKET, :PEERCRED).data.unpack1("i") == Process.ppid }
      rescue SystemCallError, SocketError
        false
      end

      def request_shape = ControlSession.request_shape(@limits)

      def session(client, outcome, bytes)
        ControlSession.new(client, token_digest: @token_digest, queue: @queue, limits: @limits, commands: @commands)
                      .run(outcome, bytes)
      end

      def busy(client)
        message = JSON.generate("error" => "busy: too many control clients at once; try again")
        client.write_nonblock("#{message}\n", exception: false)
      end
    end
  end
end
