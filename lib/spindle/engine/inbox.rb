# frozen_string_literal: true

module Spindle
  module Engine
    # Clients another hybrid loop accepted for this one (LoopShare#place):
    # sockets handed from one loop's thread to another's, with a pipe that
    # wakes the receiving loop. A socket just accepted is in no selector and
    # has no fiber yet, so it can change loops; once its fiber starts it
    # stays where it is.
    class Inbox
      def initialize
        @queue = Thread::Queue.new
        @lock = Thread::Mutex.new
        @closed = false
        @wake_r, @wake_w = IO.pipe
      end

      # Sockets handed and not taken yet.
      def size = @queue.size

      # From any thread. False once closed: the caller keeps the socket.
      def hand(socket, listener)
        @lock.synchronize do
          return false if @closed

          @queue << [socket, listener]
        end
        @wake_w.write_nonblock(".", exception: false) # a full pipe wakes the loop all the same
        true
      end

      # In the receiving loop: yields each socket and its listener as they
      # come, until the fiber is stopped. The wait yields to the loop.
      def each
        while true # not `loop`: no block frame per wake-up
          @wake_r.wait_readable
          @wake_r.read_nonblock(4096, exception: false)
          yield(*@queue.pop) until @queue.empty?
        end
      end

      # Once the loop drains: no more sockets come in. Returns the sockets
      # that were handed and not taken, each with its listener, for the loop
      # to serve: their clients connected before the drain, and their first
      # requests are on their way.
      def close
        left = @lock.synchronize do
          @closed = true
          Array.new(@queue.size) { @queue.pop }
        end
        @wake_r.close
        @wake_w.close
        left
      end
    end
  end
end
