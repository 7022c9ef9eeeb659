# frozen_string_literal: true

require_relative "timeouts"
require_relative "../process/phase"

module Spindle
  module Engine
    # The fiber engines' deadlines. A connection waiting for its client waits
    # without a timeout of its own; this task looks over the loop's
    # connections a few times a second and ends those waiting past their
    # deadline: their fiber is stopped at its wait, then they get a 408 (when
    # mid-request) and are closed. Once the process's Phase is draining, it
    # also closes the connections idle long enough to be closed
    # (Deadlines#expired?). With --request-timeout it also hands the loop's
    # connections to RequestDeadlines, which cancels the requests past
    # theirs.
    #
    # Why not a timeout per wait: the scheduler makes a timer for each one, and
    # a cancelled timer leaves its heap only once every timer ahead of it has
    # gone. One idle keep-alive client holds back all later ones for up to the
    # keep-alive timeout: at tens of thousands of requests a second, hundreds
    # of thousands of dead timers to push past and mark.
    class DeadlineSweeper
      INTERVAL = 0.25

      # tasks: Connection => the Async::Task serving it; writer: what words
      # a 408; retire: what takes a connection once its 408 is written (its
      # close lingers: FiberLoop#retire_apart); connections: the loop's
      # Connections, which closes the others; phase: the process's Phase;
      # requests: the loop's RequestDeadlines (nil: no --request-timeout).
      def initialize(tasks, deadlines, writer, retire = nil, connections:, phase: Phase.new, requests: nil)
        @tasks = tasks
        @connections = connections
        @requests = requests
        @deadlines = deadlines
        @writer = writer
        @retire = retire
        @phase = phase
      end

      def start(task)
        @task = task.async(transient: true) { run }
        self
      end

      def stop = @task&.stop

      private

      def run
        loop do
          sleep INTERVAL
          now = Timeouts.now
          late(now).each { |conn, task| expire(conn, task) }
          @requests&.check(@tasks.keys, now)
        end
      end

      def late(now)
        draining = @phase.draining?
        found = []
        @tasks.each do |conn, task|
          next unless conn.waiting_for_client?

          found << [conn, task] if @deadlines.expired?(conn, now, draining)
        end
        found
      end

      def expire(conn, task)
        Timeouts.stop_and_expire(conn, task, @writer, @connections, @retire)
      end
    end
  end
end
