# frozen_string_literal: true

require_relative "request_reader"

module Spindle
  module Engine
    # The reference engine: one thread, one request at a time. It waits (select)
    # on the listeners and on idle keep-alive connections, then reads a whole
    # request, calls the app and writes the response, blocking on each step. A
    # slow client or a slow app holds the whole process; that is the baseline the
    # other engines are measured against.
    class Blocking
      def self.multithread? = false

      def initialize(listeners:, handler:, config:, log:)
        @listeners = listeners.to_h { |l| [l.io, l] }
        @handler = handler
        @config = config
        @log = log
        @idle = {} # socket => Connection, waiting for their next request
        @reader = RequestReader.new(handler, config)
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

      # Serves requests on conn while they are already here, then parks it.
      def serve(conn)
        loop do
          return unless @reader.read(conn) == :complete

          outcome = @handler.serve(conn)
          return conn.close if outcome == :close
          return if outcome == :hijacked
          return park(conn) unless conn.buffered? && !@stopping
        end
      rescue StandardError => e
        @log.exception(e, "connection failed")
        conn.close
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
