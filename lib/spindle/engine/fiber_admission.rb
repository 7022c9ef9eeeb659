# frozen_string_literal: true

require_relative "connection_policy"
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
    # names the connections to close once the new one is accepted
    # (ConnectionPolicy#room: keep-alive ones waiting for their next request,
    # the longest idle first). While the loop is at the cap with none to
    # close, it waits, looking again every ConnectionPolicy::FULL_RECHECK,
    # and new clients wait in the kernel's backlog.
    class FiberAdmission
      # tasks: Connection => the Async::Task serving it (the loop's own).
      # connections: the loop's Connections, which closes those evicted.
      # policy: the ConnectionPolicy; budget: the process's OutputBudget;
      # share: hybrid's LoopShare (nil: a loop alone); siblings: a cluster
      # worker's SiblingShare (nil: none).
      def initialize(tasks, handler, connections:, policy:, budget:, share: nil, siblings: nil)
        @tasks = tasks
        @connections = connections
        @policy = policy
        @share = share
        @siblings = siblings
        @deference = siblings&.deference
        @own = 0 # clients this loop took
        @others_stalled_at = nil # the others' count when they took none while this loop waited
        @handler = handler
        @max = share ? share.cap(tasks, policy.cap) : policy.cap
        @budget = budget
      end

      # Waits (yielding) until one more connection may be accepted; returns
      # the connections to close (#admitted) once it is. The block answers
      # the clients already accepted whose fibers have not started
      # (FiberLoop#start), which count towards the cap though not yet in the
      # table. Asked again at every look: a count taken once went stale as
      # those fibers started, and a loop that waited at the cap with its
      # clients still queued counted them twice and never accepted again.
      def wait(&pending)
        defer_to_other_loops if @share
        defer_to_siblings(pending.call) if @deference
        loop do
          @budget.wait_for_room
          held = @tasks.size + pending.call
          victims = @policy.room(held, @tasks.each_key, @max, &:waiting_for_client?)
          return victims if victims

          sleep ConnectionPolicy::FULL_RECHECK
        end
      end

      # Once the new client is accepted: counts it (hybrid's LoopShare), and
      # closes the connections #wait named that may still go
      # (ConnectionPolicy#evict: stopping one lets other fibers run, and a
      # client may have sent a request since). Their fibers are stopped at
      # their wait, as DeadlineSweeper does; each is idle (Eviction), so it
      # closes without a word.
      def admitted(victims)
        count_accepted if @share
        @siblings&.accepted!
        @policy.evict(victims) do |conn|
          task = @tasks[conn]
          Timeouts.stop_and_close(conn, task, @connections, :evicted) if task && conn.waiting_for_client?
        end
      end

      private

      # hybrid: while this loop is ahead of the others (LoopShare), it waits
      # LoopShare::OTHERS_FIRST before each client, unless the others took
      # none during its last wait and none since, and the ones behind were
      # busy running Ruby then (LoopShare#behind_busy?).
      def defer_to_other_loops
        return unless @share.ahead?(@tasks)

        others = @share.accepted - @own
        return if others == @others_stalled_at

        sleep LoopShare::OTHERS_FIRST
        stalled = @share.accepted - @own == others && @share.behind_busy?(@tasks)
        @others_stalled_at = stalled ? others : nil
      end

      # In a cluster: while this worker is ahead of a sibling (SiblingShare),
      # it leaves the next client to it for OTHERS_FIRST.
      def defer_to_siblings(pending)
        held = @share ? @share.held : @tasks.size + pending
        sleep SiblingShare::OTHERS_FIRST if @deference.defer?(held)
      end

      def count_accepted
        @own += 1
        @share.accepted!
      end
    end
  end
end
