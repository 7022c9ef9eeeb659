# frozen_string_literal: true

module Spindle
  module Engine
    # One thread's share of the GVL among a process's threads that serve
    # requests: hybrid's loops, and the threads engine's pool threads with
    # their reactor. A thread that keeps finding work kept the GVL for long
    # stretches, and the others (the reactor with new requests in hand, a
    # loop with ready clients) waited: on hello, a p99 of 100-350 ms under
    # hybrid, and 25-40 ms under threads -t 5:5 on Ruby 3.1 (a median under
    # 1 ms), even though a pool thread lets go of the GVL while it waits for
    # its client's next request. Letting go is not handing over: on 3.1 the
    # same thread took it back first. So after each request, a thread that
    # has served for its slice since it last passed the GVL on passes it
    # (Thread.pass, which waits until another thread has run).
    #
    # The slices of the others add up to about TURN_WAIT, so a thread with
    # work waits about that long however many threads there are. One per
    # thread: its clock needs no lock.
    #
    # cpu: what a slice is measured in. Wall time (hybrid) counts the time a
    # thread waited for the GVL, or for its app's database, as serving, so a
    # thread whose requests take longer than a slice passes after every one.
    # The threads engine's pool threads count their own CPU time instead
    # (CLOCK_THREAD_CPUTIME_ID): passing after every request of a blog page
    # (a query, a 15 KB template) cost a quarter of its throughput at one
    # process on Ruby 3.1 (PERFORMANCE.md). Reading that clock is a
    # syscall, and a thread's CPU time never runs ahead of the wall clock,
    # so it is read only once the wall-time slice is spent.
    class Turns
      # About the longest a thread with work waits while the others take
      # their slices.
      TURN_WAIT = 0.002

      # The slice of each thread when `others` threads take turns with it.
      def self.slice(others) = TURN_WAIT / others

      # Made on the thread that takes the turns (a CPU clock is that thread's).
      def initialize(slice, cpu: false)
        @slice = slice
        @cpu = cpu
        start
      end

      # After a request. The clocks are read here, not through helpers: this
      # runs per request.
      def served
        return if Process.clock_gettime(Process::CLOCK_MONOTONIC) - @began < @slice
        return if @cpu && Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - @cpu_began < @slice

        Thread.pass
        start
      end

      private

      def start
        @began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @cpu_began = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) if @cpu
      end
    end
  end
end
