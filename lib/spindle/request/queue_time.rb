# frozen_string_literal: true

module Spindle
  # How long a request waited before its app call (its queue time), from the
  # two clocks that can tell:
  #
  # - the server's own: since its first byte arrived (TimedConnection
  #   puts when in the env, as TimedConnection::QUEUE_START, monotonic).
  #   On TCP that is the kernel's arrival time (ArrivalClock), so a wait
  #   unread in the kernel counts; on TLS and Unix sockets, where no such
  #   time is kept, a request waiting in the listen backlog, or unread on
  #   its socket while the only thread is busy (the blocking engine, a
  #   fiber loop held by the app), counts from when it was read.
  # - a proxy's: X-Request-Start or X-Queue-Start, stamped by the proxy
  #   in front when it received the request (nginx: "t=${msec}"; Heroku's
  #   router: milliseconds), so it counts the wait the server cannot see.
  #   Believed only from a trusted peer (--trusted-proxies, the rule of
  #   HTTP::Forwarded): anyone else could make a request look old, and
  #   have it shed (--max-queue-time).
  #
  # The earlier start wins: the longer wait. The proxy's clock is wall time
  # on another host, so its wait is read against Time.now and a stamp from
  # the future (clock skew) counts as no wait.
  class QueueTime
    FIELDS = %w[HTTP_X_REQUEST_START HTTP_X_QUEUE_START].freeze
    # "t=1733430000123456", "t=1733430000.123", "1733430000123": digits, an
    # optional fraction, an optional "t=".
    STAMP = /\A[ \t]*(?:t=)?(\d{1,20}(?:\.\d{1,9})?)[ \t]*\z/
    # Units by magnitude, as New Relic's and Judoscale's agents decide: a
    # stamp in seconds since 1970 is about 1.7e9 now, so a value past 1e11 is
    # milliseconds, past 1e14 microseconds, past 1e17 nanoseconds (good
    # until the year 5138).
    UNITS = [[1e17, 1e9], [1e14, 1e6], [1e11, 1e3]].freeze

    # The wall time (Float seconds since the epoch) a field's value names;
    # nil when it names none.
    def self.stamp(value)
      match = value.is_a?(String) && STAMP.match(value) or return nil

      number = match[1].to_f
      return nil unless number.positive?

      UNITS.each { |above, per_second| return number / per_second if number >= above }
      number
    end

    # forwarded: the trusted proxies' HTTP::Forwarded (nil: none is trusted,
    # and the fields are never read).
    def initialize(forwarded)
      @forwarded = forwarded
    end

    # Seconds env's request waited, at now (monotonic); it counts from
    # now - wait. started: the server's start (TimedConnection::QUEUE_START); nil
    # when it has none, and then only a proxy's counts. Allocates nothing
    # without a stamp (a Float in this range is an immediate value).
    def measure(env, started, now)
      wait = started ? now - started : 0.0
      proxy = proxy_wait(env)
      wait = proxy if proxy && proxy > wait
      wait.negative? ? 0.0 : wait
    end

    private

    # The wait the trusted peer's stamp says, read against Time.now; nil
    # without a stamp or a trusted peer. The peer is the connection's
    # (REMOTE_ADDR before RequestPath::ForwardedHeaders rewrites it).
    def proxy_wait(env)
      return nil unless @forwarded

      value = env[FIELDS[0]] || env[FIELDS[1]] or return nil
      stamp = QueueTime.stamp(value) or return nil
      return nil unless @forwarded.trusted?(env["REMOTE_ADDR"])

      Process.clock_gettime(Process::CLOCK_REALTIME) - stamp
    end
  end
end
