# frozen_string_literal: true

module Spindle
  module Engine
    # When each connection must next make progress, and whether it missed
    # that: one object per engine, built from the config, asked by whatever
    # watches the connections (Selection's expiry scan, the fiber engines'
    # DeadlineSweeper). A connection has one deadline at a time:
    #
    # - writing a response a client has not taken: the write timeout;
    # - idle between requests: the keep-alive timeout;
    # - in the head: an absolute deadline from its first byte, so a head
    #   trickled a byte at a time still ends;
    # - in the body: an idle deadline between reads, and a rate deadline, so a
    #   body trickled a byte at a time must still average min_body_rate.
    #
    # While the server drains, a keep-alive connection idle DRAIN_IDLE counts
    # as expired too (#closable_when_draining?).
    class Deadlines
      # A keep-alive connection idle for less than this when the server
      # drains is likely to send its next request any moment: closing it then
      # would fail that request, so it is answered instead, with
      # "connection: close".
      DRAIN_IDLE = 0.5

      def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # One connection's clock, kept by the connection and set by #renew:
      # its current deadline (at); the head's deadline and when the body
      # began, both per request; and since when it has been idle.
      Marks = Struct.new(:at, :head, :body_started, :idle_since) do
        def next_request(now)
          self.head = self.body_started = nil
          self.idle_since = now
        end
      end

      def initialize(config)
        @keepalive = config.keepalive_timeout
        @header = config.header_timeout
        @read = config.read_timeout
        @write = config.write_timeout
        @min_body_rate = config.min_body_rate
      end

      # Sets conn's deadline from now, given that it just made progress.
      def renew(conn, now = Process.clock_gettime(Process::CLOCK_MONOTONIC))
        conn.marks.at = if conn.outbox.pending?
                          now + @write
                        elsif conn.idle?
                          now + @keepalive
                        elsif !conn.head_complete?
                          conn.marks.head ||= now + @header
                        else
                          body_deadline(conn, now)
                        end
      end

      # True when conn is to be closed now: past its deadline, or, while the
      # server drains, idle long enough to go.
      def expired?(conn, now, draining)
        conn.marks.at <= now || (draining && closable_when_draining?(conn, now))
      end

      # Idle for DRAIN_IDLE after serving at least one request: a keep-alive
      # connection a draining server may close. A new connection is not: its
      # first request is on its way (closing it would fail a client that did
      # nothing wrong). Nor is one whose client may already have sent its next
      # request: bytes waiting on the socket, or a response not yet taken.
      def closable_when_draining?(conn, now = Deadlines.now)
        conn.idle? && !conn.outbox.pending? && conn.requests.positive? &&
          now - conn.marks.idle_since >= DRAIN_IDLE && !conn.io.wait_readable(0)
      end

      private

      def body_deadline(conn, now)
        idle = now + @read
        return idle unless @min_body_rate

        started = (conn.marks.body_started ||= now)
        [idle, started + @read + (conn.body_size.to_f / @min_body_rate)].min
      end
    end
  end
end
