# frozen_string_literal: true

require_relative "notifier"
require_relative "watchdog"

module Spindle
  module Systemd
    # What a cluster master tells systemd, kept out of the master's loop:
    # READY=1 the first time every worker it wants serves, STATUS= with the
    # worker counts whenever they change, RELOADING=1 / READY=1 around a
    # phased restart (USR1) and a hot restart (USR2), MAINPID= when a new
    # master takes over, STOPPING=1, and the watchdog ping.
    #
    # Only the master in charge speaks: a new master stays silent until it
    # takes over (its predecessor still answers for the service), and an old
    # master that handed over stays silent while it drains, or its counts
    # (and pings) would stand in for its successor's. The master says which
    # it is (#speaking_when); a note from one not in charge is dropped here.
    class ClusterNotes
      def self.from_env(log)
        notifier = Notifier.from_env(log)
        new(notifier, Watchdog.from_env(notifier))
      end

      attr_reader :watchdog

      def initialize(notifier, watchdog)
        @notifier = notifier
        @watchdog = watchdog
        @ready = false
        @stopping = false
        @in_charge = -> { true }
      end

      # in_charge: -> { may this master speak now } (Cluster::Takeover#in_charge?).
      def speaking_when(in_charge)
        @in_charge = in_charge
        self
      end

      # The longest the master's loop may wait before pinging again.
      def tick_limit(default) = @watchdog ? [default, @watchdog.interval].min : default

      # Every tick of the master in charge. A stopping master still pings
      # (a long drain is no hang) but reports no counts: STOPPING said it all.
      def tick(children, desired, generation, stopping:)
        return unless @in_charge.call

        @watchdog&.tick
        return if stopping

        serving = children.active.count(&:serving?)
        booting = children.active.count(&:booting?)
        text = "#{serving} of #{desired} workers serving, #{booting} booting, generation #{generation}"
        return @notifier.status(text) if @ready || serving < desired

        @ready = true
        @notifier.ready(status: text)
      end

      def reloading(why)
        @notifier.reloading(status: why) if @in_charge.call
      end

      # The reload ended, done or failed; the master serves either way.
      def reloaded(outcome)
        @notifier.ready(status: outcome) if @in_charge.call
      end

      # A new master whose workers serve replaces its predecessor for systemd.
      def took_over(desired)
        return unless @in_charge.call

        @ready = true
        @notifier.ready(main_pid: Process.pid, status: "#{desired} of #{desired} workers serving; took over from the previous master")
      end

      # Once: a stop after the drain delay is the same stop.
      def stopping(how)
        return if @stopping || !@in_charge.call

        @stopping = true
        @notifier.stopping(status: "stopping (#{how})")
      end
    end
  end
end
