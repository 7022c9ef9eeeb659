# frozen_string_literal: true

require_relative "connection_policy"
require_relative "thread_pool"

module Spindle
  module Engine
    # What a threads pool thread does with a connection the ThreadPool gave
    # it: one that holds a complete request (queued by the Reactor), or an
    # idle one from the Park whose next request has begun to arrive. It
    # serves the requests conn has in hand and then lets it go one way:
    # parked (Park), posted to the reactor (Mailbox: the rest of a slow
    # reader's response, part of a request, TLS), retired, or, with another
    # complete request while others wait for a thread, back to the pool
    # behind them. That last it does not do itself: it answers
    # ThreadPool::AGAIN and the pool queues conn again. So the pool calls
    # this object, and this object never calls the pool (it only asks, of
    # the pool it is called from, whether other items wait).
    #
    # Under --max-queue-time the keep-alive connections are parked too: a
    # request through the reactor cost ~3 times the CPU of a parked one
    # (162 against 51 us of the server's, hello world, one keep-alive
    # client at 4,000 req/s), which capacity and every 503 paid. The order
    # sees parked requests all the same: a thread about to take gathers the
    # ready ones into the queue first (ThreadPool#gather_arrived), each
    # counting from its first byte's arrival (on a Unix socket, from that
    # moment: Park#wait, TimedConnection#arriving).
    #
    # Pool threads serve pipelined requests already in hand before letting
    # the connection go, up to ConnectionPolicy::TURNS and only while no
    # other request waits for a thread, so one client cannot keep a thread.
    # While slow readers' outboxes hold more than the output budget, a pool
    # thread waits before calling the app.
    class PoolWork
      # How long a pool thread waits for the next request on its keep-alive
      # TLS connection (which the Park cannot hold), while no other request
      # waits for a thread, before handing the connection back to the reactor.
      # A client that answers quickly (the next request follows the response)
      # then costs no thread handoffs at all.
      FAST_KEEPALIVE = 0.005

      # connections: the engine's Connections, which closes what ends here
      # (and forgets what the app takes over).
      def initialize(handler:, reader:, deadlines:, budget:, mailbox:, park:, connections:, log:)
        @handler = handler
        @connections = connections
        @reader = reader
        @deadlines = deadlines
        @budget = budget
        @mailbox = mailbox
        @park = park
        @log = log
      end

      # A pool thread's turn with conn, which holds a complete request, or is
      # idle (nothing of its next request read): the Park gave it to this
      # thread as that request began to arrive. turns: the thread's Turns;
      # pool: the ThreadPool, asked how many items wait (#queued). nil, or
      # ThreadPool::AGAIN: conn holds another complete request and goes
      # behind the others.
      def call(conn, turns, pool)
        return if conn.idle? && !read_arrived(conn)

        came = nil
        served = 0
        # Not `times`: a `return` out of a block allocates on Ruby 3.1.
        while (served += 1) <= ConnectionPolicy::TURNS
          @budget.wait_for_room
          outcome = @handler.serve(conn)
          turns.served
          return @connections.release(conn) if outcome == :hijacked
          return post(conn, outcome) if conn.outbox.pending? # the reactor writes the rest
          return retire(conn, :done) if outcome == :close
          return between_requests(conn) unless (came = next_request(conn, pool))
          # Others wait for a thread: conn's next request goes behind them,
          # so a client that keeps sending cannot keep a thread.
          return again(came) unless pool.queued.zero?
        end
        again(came)
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        retire(conn, :refused)
      rescue StandardError => e
        @log.exception(e, "connection failed")
        @connections.close(conn, :failed)
        nil
      end

      private

      # How conn's next request is complete: :buffered (pipelined, parsed
      # from what was read already) or :arrived (TLS only: within
      # FAST_KEEPALIVE, while no other request waited for a thread: a wait
      # then would keep them waiting); nil when it is not.
      def next_request(conn, pool)
        return (conn.advance == :complete ? :buffered : nil) if conn.buffered?
        return nil unless conn.tls? && pool.queued.zero? && conn.io.wait_readable(FAST_KEEPALIVE)

        :arrived if conn.read_nonblock == :data && conn.advance == :complete
      end

      # Reads the request that began to arrive on a parked connection: true
      # once it is complete. Part of one goes to the reactor, which reads the
      # rest under the request's deadlines; a wake with nothing to read parks
      # the connection again.
      def read_arrived(conn)
        case @reader.poll(conn)
        when :complete then return true
        when :incomplete then between_requests(conn)
        when :refused then retire(conn, :refused)
        end
        false # :closed: the reader closed it
      end

      def post(conn, outcome)
        @mailbox.post(conn, outcome)
        nil
      end

      # conn is to close once its responses are out. The close is begun
      # here (LingeringClose): when the client sends nothing more, the common
      # case, it closes at once; while it may still be sending, the reactor
      # watches it until it is done, and no pool thread waits on it. So
      # does a response whose end the client has not taken yet.
      def retire(conn, reason)
        @connections.retire(conn, reason, @mailbox)
        nil
      end

      # conn owes nothing and holds no complete request: parked when it is a
      # plain socket with nothing of its next request read (idle: unparsed
      # bytes would have begun one), else handed to the reactor.
      def between_requests(conn)
        return if conn.idle? && !conn.tls? && park(conn)

        post(conn, :keep_alive)
      end

      # The keep-alive deadline runs from when conn went idle, so a wake with
      # nothing to read, which parks it again, does not push it back.
      def park(conn)
        @deadlines.renew(conn, conn.marks.idle_since)
        @park.park(conn)
      end

      # conn holds a complete request: it queues behind the others (the pool
      # does it, on AGAIN). After pipelined (:buffered) requests the pass
      # first lets the reactor, if it waits for the GVL with clients' bytes
      # in hand, queue theirs ahead: a thread serving buffered requests never
      # blocks, so it would otherwise hold the GVL until Ruby's 100 ms time
      # slice ends. (A request that :arrived was waited for, and the wait let
      # go of the GVL already.)
      def again(came)
        Thread.pass if came == :buffered
        ThreadPool::AGAIN
      end
    end
  end
end
