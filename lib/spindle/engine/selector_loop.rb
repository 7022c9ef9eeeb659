# frozen_string_literal: true

require_relative "selection"
require_relative "connection_policy"
require_relative "outbox"
require_relative "output_budget"
require_relative "sibling_share"
require_relative "../process/phase"

module Spindle
  module Engine
    # The selector engines' one loop: a thread waits on a Selection (epoll)
    # over the listeners and the open connections; it accepts, writes what
    # slow readers have not taken, reads requests, and closes what missed its
    # deadline. The blocking engine and the threads engine differ only in
    # their strategy: what it does with a connection that has bytes to read
    # (the blocking engine's InPlace serves it here; the threads engine's Reactor reads
    # the request and hands it to the pool), and what it does between turns.
    #
    # A strategy answers:
    #   readable(conn)      # conn has bytes to read and owes the client nothing
    #   between_turns(stopping)  # after each select: work handed back, set aside
    #   accept?             # may a new connection come in (the strategy's own reasons)
    #   idle?               # nothing of its own in hand (for the end of a drain)
    #   out_of_descriptors(selection, error)  # accept failed with EMFILE/ENFILE: true to pause accepting
    #   make_room           # at the cap with none idle in the selection: bring idle
    #                       # connections held away into it; true when it did
    #   close               # the loop ends: close what it still holds
    #
    # While the output budget is spent, at the connection cap with none idle,
    # or while the strategy says no, the listeners are not watched (from the
    # first connection that arrives meanwhile: #accept leaves it and unwatches
    # them), so new connections wait in the kernel's backlog (where other
    # processes can take them) instead of in this process. At the cap, a new
    # client takes the place of the keep-alive connections idle the longest
    # (ConnectionPolicy#room); with none, it stays in the backlog (#full?).
    #
    # In a cluster, the workers wait on the same listeners, and the one that
    # wakes first takes what is in the backlog: with the threads engine's
    # bursts, one worker often took all of a load's keep-alive connections
    # and served them on its own while its sibling stayed idle, for the
    # whole life of those connections
    # (PERFORMANCE.md, "The figures behind lib/'s comments"). So each worker
    # publishes the connections it holds after
    # every turn, and one ahead of a sibling pauses accepting while the
    # sibling takes the client (SiblingShare); a single process never pauses.
    class SelectorLoop
      # connections: the loop's Connections, where each accepted connection
      # is counted (its selection and strategy close them there); tick: the
      # longest select; policy: the ConnectionPolicy; accept_burst:
      # connections accepted per readable listener before looking at the
      # others (the policy's, for this engine); siblings: a cluster worker's
      # SiblingShare (nil: none); budget: the process's OutputBudget; phase: the process's Phase: the loop stops
      # accepting and drains once it is draining (#wake, on its change).
      def initialize(selection, strategy, connections:, handler:, config:, log:, tick:, policy:, accept_burst:,
                     siblings:, budget: OutputBudget.for(config, log), phase: Phase.new)
        @selection = selection
        @strategy = strategy
        @connections = connections
        @handler = handler
        @config = config
        @log = log
        @tick = tick
        @policy = policy
        @accept_burst = accept_burst
        @siblings = siblings
        @deference = siblings&.deference
        @budget = budget
        @phase = phase
        @paused_until = nil # accepting pauses: out of descriptors, or siblings first
        @full_until = 0 # at the cap with nothing to close (#room), until then
      end

      def run
        @selection.watch_listeners
        nil until turn && @selection.empty? && @strategy.idle?
      ensure
        @strategy.close
        @selection.close
      end

      # From any thread: the Phase moved, and a select that waits a tick
      # would see it only then.
      def wake = @selection.wakeup

      private

      # One select and what follows it. True once the process drains: the
      # Phase is read once a turn (as !accepting?, Phase#draining? less a
      # call: this runs after every select).
      def turn
        @selection.select(select_timeout) { |io_owner| io_owner.is_a?(Listener) ? accept(io_owner) : ready(io_owner) }
        draining = !@phase.accepting?
        @strategy.between_turns(draining)
        @selection.expire(draining)
        @siblings.held = held if @siblings
        balance_accepting(draining)
        draining
      end

      def accept(listener)
        @accept_burst.times do
          return @selection.unwatch_listeners unless accept?
          return unless (victims = room)
          return pause(SiblingShare::OTHERS_FIRST) if @deference&.defer?(held)

          socket = listener.accept_nonblock or return
          @policy.evict(victims) { |conn| @selection.drop(conn, :evicted) }
          conn = @handler.open_connection(socket, listener, Outbox.new(socket, @config, @budget))
          @selection.watch(@connections.add(conn))
          @siblings&.accepted!(held)
        end
      rescue Listener::Exhausted => e
        back_off(e) if @strategy.out_of_descriptors(@selection, e)
      rescue Listener::Closed
        pause(Float::INFINITY) # the master stopped listening; its stop order drains this worker
      end

      # Writes what a slow reader's outbox holds; once it is out (and the
      # response's outcome keeps the connection), the strategy reads what
      # the client sent next.
      #
      # A TLS read may have had to write first (TLS::Socket#wants_write?):
      # the selection then watches for room to write until it could. A
      # connection whose close lingers only has its input dropped.
      def ready(conn)
        return @selection.linger_on(conn) if conn.lingering?
        return if conn.outbox.pending? && !(@selection.flush(conn) && conn.buffered?)

        @strategy.readable(conn)
        @selection.follow_tls(conn) if conn.tls?
      end

      # Out of file descriptors: stop accepting for a moment and keep serving
      # the connections we have; their closing frees descriptors.
      def back_off(error)
        back_off = ConnectionPolicy::BACK_OFF
        @log.error("cannot accept (#{error.message}); pausing accepts for #{back_off}s") unless @paused_until
        pause(back_off)
      end

      def pause(seconds)
        @selection.unwatch_listeners
        @paused_until = Timeouts.now + seconds
      end

      # The tick, or less while a pause is to end sooner.
      def select_timeout
        return @tick unless @paused_until

        (@paused_until - Timeouts.now).clamp(0, @tick)
      end

      def accept?
        @phase.accepting? && @strategy.accept? && !@budget.over? && !full? &&
          !(@paused_until && Timeouts.now < @paused_until)
      end

      # The connections to close so one more fits (ConnectionPolicy#room),
      # counting those away from the selection too (#held): counting only
      # the selection let the threads engine pass the cap by a pool's
      # worth. When none in the selection may go, the strategy brings
      # back the idle ones it holds away (make_room), and they are looked at
      # too. nil when none may go: #full? then holds for FULL_RECHECK.
      # (Before, `victims ||= ... if make_room` asked make_room at every
      # accept, cap or not: each new client brought every parked
      # connection back to the reactor.)
      def room
        victims = @policy.room(held, @selection.connections)
        victims = @policy.room(held, @selection.connections) if victims.nil? && @strategy.make_room
        @full_until = Timeouts.now + ConnectionPolicy::FULL_RECHECK unless victims
        victims
      end

      # At the cap with no connection to close, as #room last found: new
      # clients wait in the backlog, unread.
      def full? = held >= @policy.cap && Timeouts.now < @full_until

      # Open connections: in the selection, or away from it (set aside,
      # queued for the pool, in a pool thread, posted back, parked).
      def held = @connections.count

      # Listeners watched stay watched until #accept finds it may not accept
      # (a readable listener while accept? is false is unwatched there) or the
      # stop begins. Asking accept? after every select cost a dozen method
      # calls per keep-alive request, on the path where it holds all along.
      def balance_accepting(draining)
        if @selection.accepting?
          @selection.unwatch_listeners if draining
        else
          @paused_until = nil if @paused_until && Timeouts.now >= @paused_until
          @selection.watch_listeners if accept?
        end
      end
    end
  end
end
