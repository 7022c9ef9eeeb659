# frozen_string_literal: true

require_relative "connection"

module Spindle
  # A Connection that notes when each request began, for its queue time
  # (RequestPath::QueueTiming): the Handler opens these only while queue
  # time is measured (RequestPath#timed?), so a plain Connection pays not
  # even a test of a flag for it.
  #
  # A request begins at the first #advance, right after its first bytes
  # were read: the earliest moment the server can know of it. A request
  # that came in with the one before it (pipelined) is first parsed once
  # that one's response is out, so it counts from then: it waited behind
  # its own connection's earlier request, by its client's choice, not for
  # the server.
  class TimedConnection < Connection
    # Where a request's queue time counts from (monotonic seconds), in its env.
    QUEUE_START = "spindle.queue_start"

    def initialize(...)
      super(...)
      @started_at = nil # monotonic: the current request's first byte
    end

    # When the current request's first byte was read (monotonic seconds);
    # nil before it, and for a pipelined request not yet parsed. WaitOrder
    # reads it.
    attr_reader :started_at

    def advance
      @started_at ||= Process.clock_gettime(Process::CLOCK_MONOTONIC)
      super
    end

    # A parked keep-alive connection whose next request has begun to arrive
    # (Engine::Park#wait): the request counts from here, before it is read,
    # so WaitOrder sees its age while it waits in the pool's queue unread.
    def arriving
      @started_at ||= Process.clock_gettime(Process::CLOCK_MONOTONIC)
      self
    end

    def finish_request_env
      env = super
      env[QUEUE_START] = @started_at
      @started_at = nil
      env
    end
  end
end
