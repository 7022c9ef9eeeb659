# frozen_string_literal: true

require_relative "settings"
require_relative "context_builder"
require_relative "socket"
require_relative "../log/reopen"

module Spindle
  module TLS
    # The TLS side of one ssl:// listener: its settings, the SSLContext new
    # connections are wrapped with, and the reload that swaps that context
    # for one built from the files as they are now (HUP). Connections
    # already open keep the context they shook hands with; the swap is one
    # reference, so threads accepting meanwhile see the old or the new one,
    # whole.
    class Context
      attr_reader :settings

      # Raises Listener::Error (boot: a bad file stops the server).
      def initialize(settings, shown)
        @settings = settings
        @shown = shown
        @ssl = ContextBuilder.build(settings, shown)
        @stamp = stamp
      end

      # A TLS::Socket over an accepted TCP socket; the handshake is the first
      # reads' (see TLS::Socket).
      def wrap(socket) = Socket.new(socket, @ssl)

      # Builds a context from the files and uses it for new handshakes. A bad
      # pair (missing, unreadable, mismatched) is logged and the old one kept:
      # a typo during a rotation must not take the site down.
      def reload(log)
        fresh = ContextBuilder.build(@settings, @shown)
        @ssl = fresh
        @stamp = stamp
        log.info("spindle: #{@shown}: reloaded #{@settings.cert} and #{@settings.key}")
        true
      rescue Listener::Error => e
        log.error("#{e.message}; keeping the certificate loaded before")
        false
      end

      # Registers #reload as a HUP action (Reopen), once: the list is
      # inherited by the processes this one forks, which share this context.
      def reload_on_hup(log)
        @on_hup ||= Reopen.register("reloading the certificate of #{@shown}") { reload(log) }
      end

      # A worker starting: the files changed since this process's parent read
      # them (a mold forks workers long after the master booted), so this
      # worker serves what a HUP would load.
      def refresh(log)
        reload(log) unless stamp == @stamp
      end

      private

      def stamp
        [@settings.cert, @settings.key, @settings.ca].compact.map do |path|
          File.stat(path).then { |s| [s.ino, s.size, s.mtime] }
        rescue SystemCallError
          nil
        end
      end
    end
  end
end
