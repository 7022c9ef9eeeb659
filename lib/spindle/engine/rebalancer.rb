# frozen_string_literal: true

module Spindle
  module Engine
    # A cluster worker's watch on its share of keep-alive clients. SiblingShare
    # splits new clients, but it can only go by the counts the workers
    # publish, and a worker still counts the connections whose clients have
    # closed them until it reads their end. A load that closed its
    # connections and opened new ones at once (a benchmark's warm-up, then
    # its run; a proxy recycling its upstream pool) then went to whichever
    # worker had noticed first, which then held them all for the whole run
    # while its sibling idled (PERFORMANCE.md, "The figures behind lib/'s comments").
    #
    # Those clients stay where they are while connected, so every CHECK the
    # watch looks again, and while this worker holds more than
    # SiblingShare::SURPLUS above a sibling, its next response closes its
    # connection (Handler#shed_one!): the client reconnects, and SiblingShare
    # leaves it to the sibling. One connection per CHECK at most; a balanced
    # cluster never closes one. It stops when the worker drains (the phase
    # says so): every response closes its connection then anyway.
    class Rebalancer
      CHECK = 0.1

      # phase: the worker's Phase.
      def initialize(share, handler, phase)
        @share = share
        @handler = handler
        @phase = phase
        @thread = nil
        phase.on_change { stop if phase.draining? }
      end

      def start
        return self if @phase.draining?

        @thread = Thread.new do
          Thread.current.name = "spindle rebalance"
          loop do
            sleep CHECK
            @handler.shed_one! if !@handler.shedding? && @share.surplus?
          end
        end
        self
      end

      def stop
        @thread&.kill
        @thread = nil
      end
    end
  end
end
