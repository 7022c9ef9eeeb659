# frozen_string_literal: true

require_relative "selector_loop"
require_relative "reactor"
require_relative "mailbox"
require_relative "thread_pool"
require_relative "park"
require_relative "turns"
require_relative "request_reader"
require_relative "connections"
require_relative "deadlines"
require_relative "output_budget"
require_relative "../ops/cpu_affinity"
require_relative "../process/phase"

module Spindle
  module Engine
    # A reactor thread buffers whole requests; a bounded thread pool runs the
    # app. A new connection's request goes: SelectorLoop + Reactor (accept,
    # read until complete) -> the ThreadPool's queue -> a pool thread (#work:
    # the Handler). After the response, a keep-alive connection waits in the
    # Park, where a free pool thread takes its next request itself, with no
    # reactor in between; one the Park cannot hold (TLS, part of a request in
    # hand, the rest of a slow reader's response, the server stopping, idle
    # for Park::RECALL_AFTER) goes to the Mailbox -> the Reactor, which
    # reads or writes the rest. Pool threads serve pipelined requests already
    # in hand before handing the connection back, up to a small number and only
    # while no other request waits for a thread, so one client cannot keep a
    # thread. While slow readers' outboxes hold more than
    # the output budget, a pool thread waits before calling the app, and the
    # reactor accepts nothing (SelectorLoop#accept?) and keeps writing to the
    # readers.
    #
    # Before Ruby 3.3 each pool thread takes Turns with the others and the
    # reactor, its slices in its own CPU time: on Ruby 3.1 a thread serving a
    # keep-alive client again and again kept the GVL from the reactor and
    # from the requests it had queued, and the tail grew far past the median
    # (PERFORMANCE.md, "The figures behind lib/'s comments"). From 3.3,
    # Ruby hands the GVL over itself
    # (Turns.for_pool).
    class Threads
      # How long a pool thread waits for the next request on its keep-alive
      # TLS connection (which the Park cannot hold), while no other request
      # waits for a thread, before handing the connection back to the reactor.
      # A client that answers quickly (the next request follows the response)
      # then costs no thread handoffs at all.
      FAST_KEEPALIVE = 0.005

      def self.multithread? = true
      def self.sizing(config) = "threads=#{config.threads.join(':')}" # the pool
      def self.connection_capacity(config) = config.max_connections

      # siblings: a cluster worker's SiblingShare (nil: none). phase: the
      # process's Phase (see Blocking).
      def initialize(listeners:, handler:, config:, log:, siblings: nil, phase: Phase.new)
        @handler = handler
        @phase = phase
        @config = config
        @log = log
        @budget = OutputBudget.for(config, log) # the process's: passed on from here
        policy = ConnectionPolicy.new(config)
        @deadlines = policy.deadlines
        @reader = RequestReader.new(handler, config, @deadlines, budget: @budget)
        selection = Selection.new(listeners, handler.writer, @deadlines)
        @mailbox = Mailbox.new(selection)
        @park = Park.new
        @pool = pool(config)
        reactor = Reactor.new(selection, @reader, @deadlines, @pool, @mailbox, @park, alone: config.workers <= 1)
        @loop = SelectorLoop.new(selection, reactor, handler: handler, config: config, log: log, tick: Reactor::TICK,
                                                     policy: policy, accept_burst: policy.accept_burst(gated: true),
                                                     budget: @budget,
                                                     siblings: siblings, phase: phase)
        phase.on_change { @loop.wake if phase.draining? }
      end

      def run
        @loop.run
      ensure
        @pool.shutdown(@config.shutdown_timeout)
        @park.release
      end

      def stop = @phase.drain! # as Blocking#stop

      # Complete requests waiting for a pool thread.
      def backlog = @pool.queued

      private

      def pool(config)
        slice = Turns.slice(config.max_threads) # the other pool threads and the reactor
        ThreadPool.new(min: config.min_threads, max: config.max_threads, on_free: @mailbox.method(:thread_freed),
                       wrap: CpuAffinity.method(:app_thread), name: "spindle pool", wait_on: @park,
                       context: -> { Turns.for_pool(slice) }) { |conn, turns| work(conn, turns) }
      end

      # How conn's next request is complete: :buffered (pipelined, parsed
      # from what was read already) or :arrived (TLS only: within
      # FAST_KEEPALIVE, while no other request waited for a thread: a wait
      # then would keep them waiting); nil when it is not.
      def next_request(conn)
        return (conn.advance == :complete ? :buffered : nil) if conn.buffered?
        return nil unless conn.tls? && @pool.queued.zero? && conn.io.wait_readable(FAST_KEEPALIVE)

        :arrived if conn.read_nonblock == :data && conn.advance == :complete
      end

      # A pool thread's turn with conn, which holds a complete request, or is
      # idle (nothing of its next request read): the Park gave it to this
      # thread as that request began to arrive. turns: the thread's Turns.
      def work(conn, turns)
        return if conn.idle? && !read_arrived(conn)

        came = nil
        served = 0
        # Not `times`: a `return` out of a block allocates on Ruby 3.1.
        while (served += 1) <= ConnectionPolicy::TURNS
          @budget.wait_for_room
          outcome = @handler.serve(conn)
          turns.served
          return if outcome == :hijacked
          return @mailbox.post(conn, outcome) if conn.outbox.pending? # the reactor writes the rest
          return retire(conn, :done) if outcome == :close
          return between_requests(conn) unless (came = next_request(conn))
          # Others wait for a thread: conn's next request goes behind them,
          # so a client that keeps sending cannot keep a thread.
          return requeue(conn, came) unless @pool.queued.zero?
        end
        requeue(conn, came)
      rescue HTTP::ParseError => e
        @handler.refuse(conn, e)
        retire(conn, :refused)
      rescue StandardError => e
        @log.exception(e, "connection failed")
        Connections.close(conn, :failed)
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

      # conn is to close once its responses are out. The close is begun
      # here (LingeringClose): when the client sends nothing more, the common
      # case, it closes at once; while it may still be sending, the reactor
      # watches it until it is done, and no pool thread waits on it. So
      # does a response whose end the client has not taken yet.
      def retire(conn, reason) = Connections.retire(conn, reason, @mailbox)

      # conn owes nothing and holds no complete request: parked when it is a
      # plain socket with nothing of its next request read (idle: unparsed
      # bytes would have begun one), else handed to the reactor.
      def between_requests(conn)
        return if conn.idle? && !conn.tls? && park(conn)

        @mailbox.post(conn, :keep_alive)
      end

      # The keep-alive deadline runs from when conn went idle, so a wake with
      # nothing to read, which parks it again, does not push it back.
      def park(conn)
        @deadlines.renew(conn, conn.marks.idle_since)
        @park.park(conn)
      end

      # conn holds a complete request: it queues behind the others. After
      # pipelined (:buffered) requests the pass first lets the reactor, if it
      # waits for the GVL with clients' bytes in hand, queue theirs ahead: a
      # thread serving buffered requests never blocks, so it would otherwise
      # hold the GVL until Ruby's 100 ms time slice ends. (A request that
      # :arrived was waited for, and the wait let go of the GVL already.)
      def requeue(conn, came)
        Thread.pass if came == :buffered
        @pool << conn
      end
    end
  end
end
