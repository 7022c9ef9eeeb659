# frozen_string_literal: true

require_relative "timeouts"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. It selects on
    # the listeners and on connections waiting for (the rest of) a request; a
    # connection whose request has fully arrived is served at once, the app and
    # the response write blocking the process. A slow app holds everything:
    # that is the baseline the other engines are measured against. A slow
    # client does not: its partial request waits parked, bounded by deadlines.
    class Blocking
      def self.multithread? = false

      def initialize(listeners:, handler:, config:, log:)
        @listeners = listeners.to_h { |l| [l.io, l] }
        @handler = handler
        @config = config
        @log = log
        @idle = {} # socket => Connection, waiting for their next request
        @stopping = false
        @wake_r, @wake_w = IO.pipe
      end

      def run
        turn until @stopping && @idle.empty?
      ensure
        @idle.each_value(&:close)
        @idle.clear
      end

      def stop
        @stopping = true
        @wake_w.write_nonblock(".", exception: false)
      end

      private

      def turn
        listening = @stopping ? [] : @listeners.keys
        ready, = IO.select([@wake_r, *listening, *@idle.keys], nil, nil, 1)
        ready&.each do |io|
          if io == @wake_r then @wake_r.read_nonblock(64, exception: false)
          elsif (listener = @listeners[io]) then accept(listener)
          else serve(@idle.delete(io))
          end
        end
        expire_idle
      end

      def accept(listener)
        return if @idle.size >= @config.max_connections

        socket = listener.accept_nonblock
        park(@handler.connection(socket, listener, @config)) if socket
      rescue Listener::Exhausted => e
        @log.error("cannot accept (#{e.message}); closing idle connections to free descriptors")
        expire_oldest_idle
      end

      def expire_oldest_idle
        io, conn = @idle.min_by { |_io, c| c.deadline }
        return unless io

        @idle.delete(io)
        conn.close
      end

      # Serves the requests conn has already sent in full, then parks it. A
      # request still arriving is parked too, never waited on, so a client that
      # trickles its head or body holds nothing but its socket.
      def serve(conn)
        while poll(conn) == :complete
          outcome = @handler.serve(conn)
          return conn.close if outcome == :close
          return if outcome == :hijacked
          break unless conn.buffered? # nothing more yet: select will say when
        end
        park(conn) unless conn.io.closed? || conn.hijacked?
      rescue StandardError => e
        @log.exception(e, "connection failed")
        conn.close
      end

      # Reads what has arrived, without waiting: :complete, :incomplete or :closed.
      def poll(conn)
        return :complete if conn.buffered? && conn.advance == :complete

        loop do
          case conn.read_nonblock
          when :data then return :complete if conn.advance == :complete
          when :wait then return :incomplete
          when :eof then return close(conn)
          end
        end
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        close(conn)
      end

      def close(conn)
        conn.close
        :closed
      end

      def park(conn)
        return conn.close if @stopping && conn.closable_when_draining?

        conn.next_deadline(Timeouts.now, @config)
        @idle[conn.io] = conn
      end

      def expire_idle
        now = Timeouts.now
        @idle.delete_if do |_io, conn|
          next false unless (@stopping && conn.closable_when_draining?) || conn.deadline <= now

          Timeouts.expire(conn, @handler)
          true
        end
      end
    end
  end
end
