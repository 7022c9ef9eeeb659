# frozen_string_literal: true

module Spindle
  module Engine
    # hybrid's loops wait on the same listeners, and the loop that holds the
    # GVL when clients arrive is the one that takes them: it never blocks
    # while it has work, so the others stay waiting for the GVL. On Ruby 3.3
    # one of 5 loops held 227-250 of hello's 256 connections (c=256), and an
    # app's CPU work on that loop held nearly every client.
    #
    # So a loop that holds more than SLACK connections above the least
    # loaded one lets the others go first: it waits OTHERS_FIRST (its own
    # clients are served meanwhile, and its turn with the GVL ends) before
    # it takes the next client. The wait is bounded: a loop held by a
    # request's CPU work takes nothing, and new clients must not wait for it.
    class LoopShare
      SLACK = 2
      OTHERS_FIRST = 0.005

      attr_reader :loops

      def initialize(loops)
        @loops = loops
        @tables = [] # each loop's open connections (a Hash)
      end

      # A loop's table of open connections; from its constructor.
      def join(table)
        @tables << table
        self
      end

      # Called by the loop that owns table, before it accepts.
      def wait_for_others(table)
        sleep OTHERS_FIRST if ahead?(table)
      end

      # More than SLACK connections above some other loop's.
      def ahead?(table)
        most = table.size - SLACK
        @tables.any? { |other| other.size < most }
      end
    end
  end
end
