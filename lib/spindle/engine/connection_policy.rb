# frozen_string_literal: true

require_relative "eviction"
require_relative "deadlines"

module Spindle
  module Engine
    # How many connections a process takes in, which it gives up for a new
    # one, and how long one client may keep the process: built once from the
    # config, and asked by both engine families (the SelectorLoop of
    # blocking and threads, the FiberLoop and FiberAdmission of fibers and
    # hybrid), so each rule is written here once. It holds the engine's
    # Deadlines too (keep-alive, request and write deadlines, and which
    # idle connections a drain closes).
    #
    # At the cap (--max-connections), a new client is accepted only when a
    # connection may be closed to make room (Eviction: an idle keep-alive
    # one, the longest idle first). When none may, the engine does not
    # accept: the client waits in the kernel's backlog until a slot frees
    # (looking again every FULL_RECHECK), where it is neither failed nor
    # read. Accepting it only to close it, or closing a connection whose
    # request has arrived, would fail a request the client sent.
    class ConnectionPolicy
      # Connections a process serving alone accepts each time a listener is
      # readable: one per wake-up left a burst of new clients in the backlog
      # behind every request of those already in (ENGINES.md). In a
      # cluster it is 1, so a sibling woken by the same connections gets its
      # share, unless the engine leaves clients to its siblings itself.
      ACCEPT_BURST = 32
      # While at the cap with nothing to close, look for a newly idle
      # connection this often.
      FULL_RECHECK = 0.25
      # Out of file descriptors (EMFILE, ENFILE): accepting pauses this long,
      # while the connections held are served and their closing frees some.
      BACK_OFF = 0.5
      # Requests a client that pipelines gets served in a row before the
      # others have their turn (a blocking engine's selector, a pool thread,
      # a fiber loop): while its socket keeps having bytes, reading them
      # never waits, and one such client kept the process, the thread or the
      # loop for as long as it kept sending.
      TURNS = 8

      attr_reader :cap, :deadlines

      def initialize(config)
        @cap = config.max_connections
        @alone = config.workers <= 1
        @deadlines = Deadlines.new(config)
      end

      # The one rule for every engine. loops: event loops of this process
      # on the same listeners (hybrid), which split the burst. gated: the
      # engine accepts in a cluster only while it has room to serve (the
      # threads engine's Reactor#accept?), so what it takes, it serves: the
      # whole burst. Others (blocking, fibers, hybrid) take 1 in a cluster.
      def accept_burst(loops: 1, gated: false)
        return ACCEPT_BURST if gated
        return 1 unless @alone

        [ACCEPT_BURST / loops, 1].max
      end

      # The connections to close so that one more fits, where `held` are
      # open under `cap`: none below it; at it, those Eviction picks among
      # `connections` (a block narrows them, as Eviction.pick). nil when none
      # may be closed: the new client is to stay in the backlog.
      def room(held, connections, cap = @cap, &)
        return Eviction::NONE if held < cap

        victims = Eviction.pick(connections, &)
        victims unless victims.empty?
      end

      # Once the new client is accepted (so that a client another process
      # took costs nobody their connection): yields each of #room's victims
      # that may still be closed, for the engine to close. One whose client
      # sent a request since it was picked stays, and the process is over
      # its cap by one until a connection ends.
      def evict(victims)
        return if victims.empty?

        now = Timeouts.now
        victims.each { |conn| yield conn if Eviction.closable?(conn, now) }
      end
    end
  end
end
