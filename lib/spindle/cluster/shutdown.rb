# frozen_string_literal: true

require_relative "message"

module Spindle
  module Cluster
    # How the master stops, one path through its Phase (docs/SIGNALS.md):
    #
    #   serving ──TERM/INT/QUIT──► leaving ──delay over──► draining ──again──► forced
    #      └────────── (no --drain-delay, or #stop) ───────────┘
    #
    #   leaving   --drain-delay: the workers answer health checks with 503
    #             while still serving; the drain follows once the delay is over.
    #   draining  TERM/INT: the workers drain within shutdown_timeout; QUIT:
    #             with no limit. The listeners stop listening (#stop_listening
    #             port), and only then does the log line say so: from it on,
    #             connections are refused.
    #   forced    a second stop signal (also one during the delay): every
    #             child is ordered to stop at once, and whatever is still
    #             there after FORCE_GRACE (a worker that never read its
    #             channel, a stuck one) is killed; then the master ends at
    #             once (#forced_end port). The master's loop goes on turning
    #             meanwhile: reaping, reading messages, answering spindlectl.
    #
    # A worker is told over its channel, never by a signal: a signal sent to
    # the whole process group (Ctrl-C, systemd without KillMode=mixed) reached
    # it already, and a second one means "exit at once" to it (Signals). A
    # child still booting reads its order once it serves.
    #
    # Ports, so a test drives it with fake children and a fake clock:
    #   kill            ->(child, name) { ... } a signal to the child's process
    #   stop_listening  -> { ... } the listeners refuse new connections
    #   forced_end      -> { ... } the forced stop's end (it does not return)
    class Shutdown
      # A forced stop waits this long for workers to log what they cut off.
      FORCE_GRACE = 2.0

      attr_reader :phase

      def initialize(phase:, children:, config:, log:, clock:, notes:, kill:, stop_listening:, forced_end:)
        @phase = phase
        @children = children
        @delay = config.drain_delay
        @log = log
        @clock = clock
        @notes = notes
        @kill = kill
        @stop_listening = stop_listening
        @forced_end = forced_end
        @how = nil # :TERM (graceful) or :QUIT (drain)
        @leave_until = nil
        @force_until = nil
      end

      # TERM, INT, or QUIT from anyone but a successor: the drain delay first
      # when there is one; a second one stops at once.
      def signal(how)
        return force if @phase.stopping?
        return stop(how) unless @delay.positive?

        leave(how)
      end

      # The drain (also after the delay, and when a successor serves or a
      # successor gives up). A stop that is already draining stops at once.
      def stop(how)
        return force if @phase.draining?

        @phase.drain!
        @how = how
        @notes.stopping(drain? ? "drain" : "graceful")
        @children.each { |c| order(c, drain? ? :unlimited : :timed) }
        @stop_listening.call
        @log.info("spindle: stopping (#{drain? ? 'drain' : 'graceful'}): #{@children.count(&:pid)} " \
                  "child process(es) told; signal again to stop at once")
      end

      def force
        return unless @phase.force!

        @log.error("second stop signal: stopping #{@children.count(&:pid)} child process(es) at once")
        @children.each { |c| order(c, :now) }
        @force_until = @clock.call + FORCE_GRACE
      end

      # Every tick of the master's loop: the delay's end, the forced stop's end.
      def tick
        stop(@how) if @phase.name == :leaving && @clock.call >= @leave_until
        finish_force if @phase.forced? && (@children.none?(&:pid) || @clock.call >= @force_until)
      end

      # The longest the master's loop may wait before the next #tick is due.
      def wait_limit(default)
        return default unless @force_until

        [default, [@force_until - @clock.call, 0].max].min
      end

      # Stopped: the stop began and no child is left.
      def done? = @phase.draining? && @children.none?

      # how: :timed, :unlimited or :now (Message::Stop). A worker (also one
      # draining to become the mold) is told over its channel. A mold serves
      # nothing: TERM ends it at once (a retiring one no longer reads its
      # channel).
      def order(child, how)
        return @kill.call(child, :TERM) if child.mold? && child.state != :mold_pending

        Message.send_to(child.channel, Message::Stop.new(how: how))
      end

      private

      def drain? = @how == :QUIT

      def leave(how)
        @phase.leave!
        @how = how
        @leave_until = @clock.call + @delay
        @notes.stopping("drain delay, then #{drain? ? 'drain' : 'graceful'}")
        @log.info("spindle: drain delay: health checks answer 503, workers still serve for #{@delay}s, " \
                  "then #{drain? ? 'drain' : 'stop gracefully'}; signal again to stop at once")
        @children.select(&:serving?).each { |c| Message.send_to(c.channel, Message::LeavePool.new(delay: @delay)) }
      end

      def finish_force
        @children.each { |c| @kill.call(c, :KILL) }
        @forced_end.call
      end
    end
  end
end
