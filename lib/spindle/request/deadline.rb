# frozen_string_literal: true

module Spindle
  # Raised into a request's fiber (fibers and hybrid engines, with
  # --request-timeout) at its first wait past its deadline: a sleep, a
  # socket, DNS, a database query through the scheduler. An Exception, not a
  # StandardError, so that an app's `rescue => e` does not take it for its
  # own failure and carry on; its ensure blocks run. docs/DEADLINES.md.
  class RequestTimeout < Exception # rubocop:disable Lint/InheritException -- see above
  end

  # One request's deadline (--request-timeout), in env["spindle.deadline"]:
  # when the app's call must be over, on the monotonic clock. The app may
  # move it (#extend_by, #shorten_by, #set) before it passes, and read it to
  # pass it on (#remaining, as PostgreSQL's statement_timeout).
  #
  # Its life: :running from the app's call; :passed once the engine's watch
  # found it past (logged, and on the fiber engines raised into #fiber);
  # :done once the call is over (RequestPath::RequestDeadline#call). A
  # deadline that is not :running is never moved nor watched again.
  class Deadline
    ENV_KEY = "spindle.deadline"

    def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    # seconds: the configured deadline, from the start of the app's call.
    # fiber: where the app runs, under a fiber engine (what it raises into).
    attr_reader :at, :seconds, :started_at, :fiber

    def initialize(seconds, now = Deadline.now)
      @seconds = seconds
      @started_at = now
      @at = now + seconds
      # Only a fiber engine raises into it; on a thread, Fiber.current
      # would make the thread's root Fiber object, for nothing.
      @fiber = Fiber.current if Fiber.scheduler
      @state = :running
      @late = @passed = @raised = false
    end

    # Seconds left; negative once it passed.
    def remaining = @at - Deadline.now

    # More time for this request: seconds more than it had. Not named
    # #extend, which every object already answers (Object#extend).
    def extend_by(seconds) = move(@at + seconds)

    def shorten_by(seconds) = move(@at - seconds)

    # The deadline becomes seconds from now.
    def set(seconds) = move(Deadline.now + seconds)

    def running? = @state == :running

    # True once the engine's watch found it past (#pass!), whatever came
    # after: it logged it.
    def passed? = @passed

    # The watch's test: still running, and past.
    def due?(now) = @state == :running && @at <= now

    # The watch's mark, once: true when it was still running.
    def pass!
      return false unless @state == :running

      @state = :passed
      @passed = true
    end

    # The app's call is over; true when it ran late (the watch passed it,
    # or it returned past its deadline before the watch looked).
    def finish(now = Deadline.now)
      return @late if @state == :done

      @late = @passed || @at <= now
      @state = :done
      @late
    end

    def late? = @late

    # The fiber engines' watch raised RequestTimeout into #fiber (false:
    # it could not after all).
    def raised!(raised = true)
      @raised = raised
    end

    def raised? = @raised

    private

    # A deadline already passed is not moved: what followed its passing
    # (the log line, the exception raised) is done.
    def move(at)
      @at = at if running?
      @at
    end
  end
end
