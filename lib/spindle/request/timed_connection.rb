# frozen_string_literal: true

require_relative "connection"
require_relative "arrival_clock"

module Spindle
  # A Connection that notes when each request began, for its queue time
  # (RequestPath::QueueTiming): the Handler opens these only while queue
  # time is measured (RequestPath#timed?), so a plain Connection pays not
  # even a test of a flag for it.
  #
  # A request begins when the kernel received its first byte, read off the
  # socket before the server reads it (ArrivalClock), where the listener
  # asked the kernel to note it; else at the first #advance, right after
  # its first bytes were read. A request that came in with the one before
  # it (pipelined) is first parsed once that one's response is out, so it
  # counts from then: it waited behind its own connection's earlier
  # request, by its client's choice, not for the server.
  class TimedConnection < Connection
    # Where a request's queue time counts from (monotonic seconds), in its env.
    QUEUE_START = "spindle.queue_start"

    def initialize(io, config, env_template, outbox, proxy_protocol: false, tls: false)
      super
      @started_at = nil # monotonic: the current request's first byte
      # Where the kernel's arrival times are read: a plain socket's fd,
      # when its listener asked for them.
      @arrival_fd = io.fileno if !tls && ArrivalClock.stamped?(io)
    end

    # When the current request's first byte arrived (monotonic seconds);
    # nil before it, and for a pipelined request not yet parsed. WaitOrder
    # reads it.
    attr_reader :started_at

    # Before a request's first read: when its first byte reached the host.
    # Not while unparsed bytes are in hand (a pipelined request counts from
    # its parse, above). When the peek finds no byte waiting, the read
    # would find none either, and is not made: a fiber's read tried right
    # after a response costs one syscall, as without the peek.
    def read_nonblock
      if @arrival_fd && !@started_at && !unparsed?
        at = ArrivalClock.first_byte_at(@arrival_fd)
        return :wait if at == :wait

        @started_at = at
      end
      super
    end

    def advance
      @started_at ||= Process.clock_gettime(Process::CLOCK_MONOTONIC)
      super
    end

    # A parked keep-alive connection whose next request has begun to arrive
    # (Engine::Park#wait): the request counts from its first byte, or from
    # here, before it is read, so WaitOrder sees its age while it waits in
    # the pool's queue unread.
    def arriving
      @started_at ||= arrived_at || Process.clock_gettime(Process::CLOCK_MONOTONIC)
      self
    end

    def finish_request_env
      env = super
      env[QUEUE_START] = @started_at
      @started_at = nil
      env
    end

    private

    # The kernel's time for the first unread byte, or nil.
    def arrived_at
      at = ArrivalClock.first_byte_at(@arrival_fd) if @arrival_fd
      at if at.is_a?(Float)
    end
  end
end
