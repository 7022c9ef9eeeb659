# frozen_string_literal: true

require_relative "../boot/ruby_version"

module Spindle
  module Engine
    # One thread's share of the GVL among a process's threads that serve
    # requests: hybrid's loops, and the threads engine's pool threads with
    # their reactor. A thread that keeps finding work kept the GVL for long
    # stretches, and the others (the reactor with new requests in hand, a
    # loop with ready clients) waited: the tail grew to hundreds of times
    # the median (PERFORMANCE.md, "The figures behind lib/'s comments"),
    # even though a pool thread lets go of the GVL while it waits for
    # its client's next request. Letting go is not handing over: on 3.1 the
    # same thread took it back first. So after each request, a thread that
    # has served for its slice since it last passed the GVL on passes it
    # (Thread.pass, which waits until another thread has run).
    #
    # The slices of the others add up to about TURN_WAIT, so a thread with
    # work waits about that long however many threads there are. One per
    # thread: its clock needs no lock.
    #
    # A slice is the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID). Wall
    # time counted the time a thread waited for the GVL, or for its app's
    # database, as serving, so a thread whose requests took longer than a
    # slice passed after every one: on a blog page (a query, a 15 KB
    # template) that cost the threads engine much of its throughput, and
    # hybrid a share of its CPU (PERFORMANCE.md, "The figures behind lib/'s comments").
    # Reading that clock is a syscall, and a thread's CPU time never runs
    # ahead of the wall clock, so it is read only once the wall-time slice
    # is spent.
    class Turns
      # About the longest a thread with work waits while the others take
      # their slices.
      TURN_WAIT = 0.002

      # Whether a thread that blocks hands the GVL to the thread that has
      # waited longest (Ruby 3.3's thread scheduler), rather than letting go
      # of it for whoever takes it first (3.1 and 3.2).
      HANDS_OVER = RubyVersion.at_least?("3.3")

      # Turns that are never taken.
      NONE = Object.new.tap { |none| def none.served = nil }.freeze

      # The slice of each thread when `others` threads take turns with it.
      def self.slice(others) = TURN_WAIT / others

      # A pool thread's turns (Engine::Threads). Where the GVL is handed over,
      # none: a pool thread blocks in nearly every request (on its app's
      # database, on the wait for the next request, on an empty queue), and
      # each block hands the GVL on, so the pass after a request mostly added
      # a handoff: the Rails page on Ruby 3.3 (a pass after every request)
      # served more without it, and hello's tail stayed short
      # (PERFORMANCE.md, "The figures behind lib/'s comments"). A thread
      # that finds queued requests and never
      # blocks keeps the GVL until Ruby's own time slice ends. hybrid's loops
      # keep their turns: a loop with ready fibers does not block.
      def self.for_pool(slice) = HANDS_OVER ? NONE : new(slice)

      # Made on the thread that takes the turns (its CPU clock is that thread's).
      def initialize(slice)
        @slice = slice
        start
      end

      # After a request; true when it passed the GVL on. The clocks are read
      # here, not through helpers: this runs per request. When the wall-time
      # slice is spent but the CPU-time one is not, the wall-time slice
      # restarts as if only the CPU time used had passed: the rest of the CPU
      # slice takes at least as long in wall time, so the CPU clock (a
      # syscall) is not read again before then.
      def served
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return false if now - @began < @slice

        used = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - @cpu_began
        if used < @slice
          @began = now - used
          false
        else
          pass
        end
      end

      # Ends this thread's turn before its slice is spent, once the turn has
      # lasted at least seconds: the others run first. True if it passed.
      def pass_after(seconds)
        return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) - @began < seconds

        pass
      end

      private

      def pass
        Thread.pass
        start
        true
      end

      def start
        @began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @cpu_began = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
      end
    end
  end
end
