# frozen_string_literal: true

require "nio"
require_relative "timeouts"

module Spindle
  module Engine
    # The threads engine's I/O thread. It accepts connections and reads each
    # request until it is complete (head and body), so a slow client costs a
    # registered socket, never a pool thread. Complete requests go to the pool;
    # keep-alive connections come back here between requests.
    #
    # Everything touching the selector runs on the reactor's own thread; other
    # threads hand connections back through #resume, which queues and wakes it.
    # While the pool has no spare thread the listeners are not watched, so new
    # connections wait in the kernel's backlog (where other processes can take
    # them) instead of in this process.
    class Reactor
      TICK = 0.5
      ACCEPT_BURST = 32
      BACK_OFF = 0.5

      def initialize(listeners:, handler:, config:, pool:, log:)
        @log = log
        @listeners = listeners
        @handler = handler
        @config = config
        @pool = pool
        @selector = NIO::Selector.new
        @resumed = Thread::Queue.new
        @conns = {} # socket => Connection, registered for reading
        @accepting = false
        @stopping = false
      end

      def run
        watch_listeners
        turn until @stopping && @conns.empty? && @resumed.empty? && @pool.idle?
      ensure
        @conns.each_value(&:close)
        @selector.close
      end

      # From any thread: a connection whose response is done and may carry more.
      def resume(conn)
        @resumed << conn
        @selector.wakeup
      end

      # From any thread: the pool freed a thread.
      def wakeup
        @selector.wakeup unless @accepting || @stopping
      end

      def stop
        @stopping = true
        @selector.wakeup
      end

      private

      def turn
        @selector.select(TICK) { |monitor| ready(monitor) }
        take_resumed
        expire
        @stopping ? unwatch_listeners : balance_accepting
      end

      def ready(monitor)
        target = monitor.value
        target.is_a?(Listener) ? accept(target) : read(target)
      end

      def accept(listener)
        ACCEPT_BURST.times do
          return unwatch_listeners unless can_accept?

          socket = listener.accept_nonblock or return
          watch(@handler.connection(socket, listener, @config))
        end
      rescue Listener::Exhausted => e
        back_off(e)
      end

      # Out of file descriptors: stop accepting for a moment and keep serving the
      # connections we have; their closing frees descriptors.
      def back_off(error)
        @log.error("cannot accept (#{error.message}); pausing accepts for #{BACK_OFF}s") unless @backing_off
        unwatch_listeners
        @backing_off = Timeouts.now + BACK_OFF
      end

      def can_accept?
        @pool.spare? && @conns.size < @config.max_connections &&
          !(@backing_off && Timeouts.now < @backing_off)
      end

      def read(conn)
        case conn.read_nonblock
        when :data then progress(conn)
        when :eof then drop(conn)
        end
      end

      def progress(conn)
        if conn.advance == :complete
          unwatch(conn)
          @pool << conn
        else
          conn.next_deadline(Timeouts.now, @config)
        end
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        drop(conn)
      end

      def take_resumed
        until @resumed.empty?
          conn = @resumed.pop
          next conn.close if @stopping && conn.idle?

          watch(conn)
          progress(conn) if conn.buffered? # a pipelined request already read
        end
      end

      def watch(conn)
        conn.next_deadline(Timeouts.now, @config)
        @selector.register(conn.io, :r).value = conn
        @conns[conn.io] = conn
      end

      def unwatch(conn)
        @selector.deregister(conn.io)
        @conns.delete(conn.io)
      end

      def drop(conn)
        unwatch(conn)
        conn.close
      end

      # Closes what missed its deadline; when draining, idle keep-alive ones at once.
      def expire
        now = Timeouts.now
        @conns.values.each do |conn|
          next unless conn.deadline <= now || (@stopping && conn.closable_when_draining?)

          unwatch(conn)
          Timeouts.expire(conn, @handler)
        end
      end

      def balance_accepting
        @backing_off = nil if @backing_off && Timeouts.now >= @backing_off
        if @accepting then unwatch_listeners unless can_accept?
        elsif can_accept? then watch_listeners
        end
      end

      def watch_listeners
        return if @accepting

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
