# frozen_string_literal: true

require "nio"
require_relative "timeouts"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. An epoll selector
    # (nio4r) watches the listeners and every open connection; a connection
    # whose request has fully arrived is served at once, the app and the
    # response write blocking the process. A slow app holds everything: that is
    # the baseline the other engines are measured against. A slow client does
    # not: its partial request stays parked, bounded by deadlines.
    #
    # A connection stays registered for its whole life (only this thread touches
    # the selector), so a request costs no registration and no arrays.
    class Blocking
      TICK = 1.0

      def self.multithread? = false

      def initialize(listeners:, handler:, config:, log:)
        @listeners = listeners
        @handler = handler
        @config = config
        @log = log
        @selector = NIO::Selector.new
        @conns = {} # socket => Connection
        @stopping = false
        @accepting = false
      end

      def run
        watch_listeners
        turn until @stopping && @conns.empty?
      ensure
        @conns.each_value(&:close)
        @selector.close
      end

      def stop
        @stopping = true
        @selector.wakeup
      end

      private

      def turn
        @selector.select(TICK) { |monitor| ready(monitor.value) }
        unwatch_listeners if @stopping
        expire
      end

      def ready(target)
        target.is_a?(Listener) ? accept(target) : serve(target)
      end

      def accept(listener)
        return if @conns.size >= @config.max_connections

        socket = listener.accept_nonblock
        watch(@handler.connection(socket, listener, @config)) if socket
      rescue Listener::Exhausted => e
        @log.error("cannot accept (#{e.message}); closing the longest-idle connection")
        expire_oldest
      end

      # Serves the requests conn has already sent in full. A request still
      # arriving is left to the selector, never waited on.
      def serve(conn)
        while poll(conn) == :complete
          case @handler.serve(conn)
          when :close then return drop(conn)
          when :hijacked then return forget(conn)
          end
          break unless conn.buffered? # nothing more yet: the selector will say when
        end
        conn.next_deadline(Timeouts.now, @config) unless conn.io.closed?
        drop(conn) if @stopping && conn.closable_when_draining?
      rescue StandardError => e
        @log.exception(e, "connection failed")
        drop(conn)
      end

      # Reads what has arrived, without waiting: :complete, :incomplete or :closed.
      def poll(conn)
        return :complete if conn.buffered? && conn.advance == :complete

        loop do
          case conn.read_nonblock
          when :data then return :complete if conn.advance == :complete
          when :wait then return :incomplete
          when :eof then return drop(conn)
          end
        end
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        drop(conn)
      end

      def watch(conn)
        conn.next_deadline(Timeouts.now, @config)
        @selector.register(conn.io, :r).value = conn
        @conns[conn.io] = conn
      end

      def forget(conn)
        @selector.deregister(conn.io)
        @conns.delete(conn.io)
      end

      def drop(conn)
        forget(conn)
        conn.close
        :closed
      end

      def expire
        now = Timeouts.now
        @conns.values.each do |conn|
          next unless conn.deadline <= now || (@stopping && conn.closable_when_draining?)

          forget(conn)
          Timeouts.expire(conn, @handler)
        end
      end

      def expire_oldest
        conn = @conns.values.min_by(&:deadline)
        drop(conn) if conn
      end

      def watch_listeners
        @listeners.each { |l| @selector.register(l.io, :r).value = l }
        @accepting = true
      end

      def unwatch_listeners
        return unless @accepting

        @listeners.each { |l| @selector.deregister(l.io) }
        @accepting = false
      end
    end
  end
end
