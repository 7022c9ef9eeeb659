# frozen_string_literal: true

module Spindle
  module Engine
    # hybrid's loops wait on the same listeners, and the loop that holds the
    # GVL when clients arrive is the one that takes them: it never blocks
    # while it has work, so the others stay waiting for the GVL. On Ruby 3.3
    # one loop held nearly all of a load's connections, and an app's CPU
    # work on that loop held nearly every client (PERFORMANCE.md,
    # "The figures behind lib/'s comments").
    #
    # So a loop that holds more than SLACK connections above the least
    # loaded one lets the others go first (FiberAdmission): it waits
    # OTHERS_FIRST (its own clients are served meanwhile, and its turn with
    # the GVL ends) before it takes the next client. If no other loop took
    # a client while it waited, and every loop behind it is running Ruby
    # (#behind_busy?), they cannot (a request's CPU work holds them), and it
    # stops waiting until one of them takes a client again: waiting at
    # every client handed the GVL to that work for Ruby's 100 ms time slice
    # each time, and new clients waited for a long request to end, several
    # times longer than before LoopShare.
    #
    # A loop behind that sleeps (in its selector, or waiting for the GVL on
    # its way out of it) only had no turn yet: another thread of the
    # process held the GVL through the wait. It takes clients as soon as it
    # runs, so the loop ahead keeps waiting. Judged on the wait alone, a
    # thread of the app spinning beside the loops sometimes made one loop
    # take most of a burst of clients; judged as below, it no longer does.
    #
    # Whichever loop accepts a client, it then goes to the loop holding the
    # fewest (#lighter, FiberLoop#place): the loops get equal turns at the
    # GVL, so only an even split serves their clients alike.
    #
    # The share knows no loop: each joins with its table of connections,
    # and one that takes clients handed over with its Inbox and how to ask
    # whether it is held (FiberLoop#held?), and gets its Seat. The loops
    # call the share; the share calls none of them, and a loop hands a
    # client to another's Inbox, never to the loop.
    class LoopShare
      SLACK = 2
      OTHERS_FIRST = 0.005

      # One loop's place in the share. placed: the clients #place counted on
      # it and not gone (held, queued to start, or handed and in its
      # inbox); changed under the share's lock. held: a callable, true while
      # code that does not yield holds the loop.
      Seat = Struct.new(:table, :inbox, :held, :placed)

      attr_reader :loops

      def initialize(loops)
        @loops = loops
        @tables = [] # each loop's open connections (a Hash)
        @seats = [] # the Seats of the loops that take clients handed over
        @threads = {}.compare_by_identity # a table => its loop's thread, once it runs
        @accepted = 0 # clients taken by every loop, ever
        @lock = Thread::Mutex.new # #place and #release: the loops' counts
      end

      attr_reader :accepted

      # A loop took a client. Loops run under one GVL: += needs no lock.
      def accepted! = @accepted += 1

      # A loop's table of open connections; from its constructor. inbox:
      # where other loops hand it clients (#lighter), with held (see Seat);
      # nil: none is handed to it. Its Seat.
      def join(table, inbox: nil, held: nil)
        @tables << table
        seat = Seat.new(table, inbox, held, 0)
        @seats << seat if inbox
        seat
      end

      # From a loop's own thread, as it starts to run.
      def running(table)
        @threads[table] = Thread.current
        self
      end

      # A loop's share of the process's connection cap (--max-connections):
      # the cap split evenly, the first loops taking one more where it does
      # not divide, and at least one each. The loops' shares add up to the
      # cap, so a process holds what the flag says, as under every engine.
      def cap(table, max)
        index = @tables.index { |other| other.equal?(table) } or raise ArgumentError, "not a joined loop"
        [(max / @loops) + (index < max % @loops ? 1 : 0), 1].max
      end

      # The Seat of the loop that takes a client accepting (a Seat)
      # accepted: #lighter, else accepting itself; counted on it at once
      # (Seat#placed), under a lock. A count read off the queues and tables a client passes
      # through lagged behind it: a thread switch between two loops' choices,
      # or while a handed client left the inbox for its fiber, gave a loop
      # one client more than the others ([24, 25, 25, 26] of 100 on a busy
      # machine; test/unit/hybrid_balance_test.rb).
      def place(accepting)
        @lock.synchronize do
          target = lighter(accepting) || accepting
          target.placed += 1
          target
        end
      end

      # A client #place counted on seat left it: its connection ended, or
      # it never started there.
      def release(seat) = @lock.synchronize { seat.placed -= 1 }

      # A client #place counted on from stays with to (from's inbox closed).
      def move(from, to)
        @lock.synchronize do
          from.placed -= 1
          to.placed += 1
        end
      end

      # The Seat of the loop that should take a client accepting (a Seat)
      # accepted, when it is not accepting itself: the one holding the
      # fewest (Seat#placed) if that is fewer than accepting's. Only a loop
      # that will start it soon: asleep in its selector, or running and not
      # held by code that does not yield (Seat#held). nil: accepting keeps it.
      def lighter(accepting)
        own = accepting.placed
        @seats.select { |other| other.placed < own && ready?(other) }.min_by(&:placed)
      end

      # The connections every loop holds.
      def held = @tables.sum(&:size)

      # More than SLACK connections above some other loop's.
      def ahead?(table)
        most = table.size - SLACK
        @tables.any? { |other| other.size < most }
      end

      # Every loop more than SLACK connections behind table's is running
      # Ruby (its thread holds the GVL or waits for it mid-work), none asleep
      # in its selector. A loop not running yet counts as asleep.
      def behind_busy?(table)
        most = table.size - SLACK
        @tables.all? { |other| other.size >= most || @threads[other]&.status == "run" }
      end

      private

      def ready?(other)
        thread = @threads[other.table]
        return false unless thread&.alive?

        thread.status == "sleep" || !other.held.call
      end
    end
  end
end
