# frozen_string_literal: true

require_relative "../http/parser" # loads the extension, which defines WaitSet

module Spindle
  module Engine
    # Where the threads engine's pool threads leave a keep-alive connection
    # after its response, and find the next request that arrives on it, with
    # no reactor in between. The free pool threads wait on one epoll set
    # (WaitSet, in C: the wait lets go of the GVL unless an event is there) in which each parked
    # socket is armed for a single event, so the kernel gives a request to
    # one free thread, which reads and serves it. Through the reactor, each
    # request woke two threads in turn (the reactor to read it, then a pool
    # thread to serve it) and cost the reactor an epoll_ctl pair; a parked
    # one costs one epoll_ctl and one wake (PERFORMANCE.md).
    #
    # The same set counts the pool queue's notifications (ThreadPool#<<), so
    # a free thread waits on both at once: the pool's wait_on (#wait,
    # #notify), the only part of the Park the pool knows.
    #
    # A connection parked for RECALL_AFTER, or whose keep-alive deadline
    # nears, goes back to the reactor (#recall), whose Selection keeps the
    # rules for idle connections: the deadline, eviction at the connection
    # cap, and the drain. At the cap, with no idle connection left in that
    # Selection, all of them go back (Reactor#make_room).
    #
    # Whichever thread takes a parked connection first owns it: a pool thread
    # woken by its request (#wait), or the reactor recalling it. Only plain
    # sockets are parked: a TLS socket may hold decrypted bytes that epoll
    # cannot see.
    class Park
      # Idle this long (seconds) and a parked connection is recalled: far
      # over the pause between a client's requests under load.
      RECALL_AFTER = 1.0

      def initialize
        @set = WaitSet.new
        @mutex = Thread::Mutex.new
        @parked = {} # id => Connection, the id armed in the set for its socket
        @last_id = 0
        @open = true
      end

      # Connections parked now. Read without the lock, for counting.
      def size = @parked.size
      def empty? = @parked.empty?

      # From the pool thread that holds conn, idle after a response: true
      # when it is parked; false once the park is closed (the server stops),
      # or when its socket is gone, so the caller hands conn to the reactor.
      # Recorded before it is armed: its request may come at once.
      def park(conn)
        fd = conn.io.fileno
        @mutex.synchronize { @open && arm(conn, fd) } # no `return` in the block: on 3.1 each allocates
      end

      # From a free pool thread, for up to timeout seconds: a parked
      # Connection whose next request has begun to arrive (now the caller's),
      # :notified (ThreadPool#<< queued work), or nil (the timeout passed, a
      # signal came, the reactor recalled the connection first, or the park
      # was released under a thread the pool's shutdown gave up on).
      def wait(timeout)
        got = @set.wait(timeout)
        return got && :notified unless got.is_a?(Integer)

        conn = @mutex.synchronize { @parked.delete(got) }
        conn&.arriving
      rescue IOError
        nil
      end

      # Lets count more #wait calls return :notified.
      def notify(count = 1) = @set.notify(count)

      # From the reactor's thread: takes back each connection idle since
      # before `idle_before`, or whose deadline comes by `due_by` (monotonic
      # times), and yields it.
      def recall(idle_before, due_by, &)
        return if @parked.empty?

        @mutex.synchronize do
          take_back { |conn| conn.marks.idle_since < idle_before || conn.marks.at <= due_by }
        end.each(&)
      end

      # From the reactor's thread as the server stops: parks nothing more, and
      # yields every connection parked.
      def close(&)
        @mutex.synchronize do
          @open = false
          take_back { true }
        end.each(&)
      end

      # Once no thread waits on it any more.
      def release = @set.close

      private

      # Under the lock.
      def arm(conn, fd)
        id = (@last_id += 1)
        @parked[id] = conn
        return true if @set.arm(fd, id)

        @parked.delete(id)
        false
      end

      # Under the lock: unarms and forgets the connections the block picks,
      # and returns them. None is a pool thread's from then on: a wait that
      # saw one's event finds it gone.
      def take_back
        picked = []
        @parked.delete_if { |_, conn| yield(conn) && picked << conn }
        picked.each { |conn| @set.disarm(conn.io.fileno) }
      end
    end
  end
end
