# frozen_string_literal: true

require_relative "eviction"
require_relative "loop_share"
require_relative "output_budget"
require_relative "sibling_share"
require_relative "timeouts"

module Spindle
  module Engine
    # What a FiberLoop's acceptor asks before it takes a connection: a hybrid
    # loop ahead of the others lets them go first (LoopShare); it waits
    # while the process's output budget is spent (slow readers hold enough),
    # and at the loop's connection cap (its LoopShare#cap under hybrid) it
    # names the connections idle the longest, to be closed once the new one
    # is accepted (Eviction). While the loop is at the cap with none idle,
    # it waits, looking again every FULL_RECHECK, and new clients wait in the
    # kernel's backlog.
    class FiberAdmission
      FULL_RECHECK = 0.25

      # connections: Connection => the Async::Task serving it (the loop's own).
      # share: hybrid's LoopShare (nil: a loop alone); siblings: a cluster
      # worker's SiblingShare (nil: none).
      def initialize(connections, handler, config, log, share: nil, siblings: nil)
        @connections = connections
        @share = share
        @siblings = siblings
        @deference = siblings&.deference
        @own = 0 # clients this loop took
        @others_stalled_at = nil # the others' count when they took none while this loop waited
        @handler = handler
        @max = share ? share.cap(connections, config.max_connections) : config.max_connections
        @budget = OutputBudget.for(config, log)
      end

      # Waits (yielding) until one more connection may be accepted; returns
      # the connections to close (#admitted) once it is. pending: clients
      # already accepted whose fibers have not started (FiberLoop#start),
      # which count towards the cap though not yet in the table.
      def wait(pending = 0)
        defer_to_other_loops if @share
        defer_to_siblings(pending) if @deference
        loop do
          @budget.wait_for_room
          return Eviction::NONE if @connections.size + pending < @max

          victims = Eviction.pick(@connections.each_key, &:waiting_for_client?)
          return victims unless victims.empty?

          sleep FULL_RECHECK
        end
      end

      # Once the new client is accepted: counts it (hybrid's LoopShare), and
      # closes the connections #wait named that are still idle (stopping one
      # lets other fibers run, and a client may have sent a request since).
      # Their fibers are stopped at their wait, as DeadlineSweeper does.
      def admitted(victims)
        count_accepted if @share
        @siblings&.accepted!
        victims.each do |conn|
          task = @connections[conn]
          next unless task && conn.waiting_for_client? && Eviction.idle?(conn) && Eviction.quiet?(conn)

          Timeouts.stop_and_expire(conn, task, @handler.writer)
        end
      end

      private

      # hybrid: while this loop is ahead of the others (LoopShare), it waits
      # LoopShare::OTHERS_FIRST before each client, unless the others took
      # none during its last wait and none since, and the ones behind were
      # busy running Ruby then (LoopShare#behind_busy?).
      def defer_to_other_loops
        return unless @share.ahead?(@connections)

        others = @share.accepted - @own
        return if others == @others_stalled_at

        sleep LoopShare::OTHERS_FIRST
        stalled = @share.accepted - @own == others && @share.behind_busy?(@connections)
        @others_stalled_at = stalled ? others : nil
      end

      # In a cluster: while this worker is ahead of a sibling (SiblingShare),
      # it leaves the next client to it for OTHERS_FIRST.
      def defer_to_siblings(pending)
        held = @share ? @share.held : @connections.size + pending
        sleep SiblingShare::OTHERS_FIRST if @deference.defer?(held)
      end

      def count_accepted
        @own += 1
        @share.accepted!
      end
    end
  end
end
