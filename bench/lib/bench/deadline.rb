# frozen_string_literal: true

require_relative "log"

module Bench
  # A moment on the monotonic clock after which no new trial starts, and what
  # set it (the run's --deadline, a scenario's --quick budget), for the
  # "skipped: ..." reason the reports show. The clock is injectable so the
  # tests can move time on without sleeping.
  class Deadline
    CLOCK = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

    attr_reader :at, :what

    def self.after(seconds, what, clock: CLOCK)
      new(clock.call + seconds, what, clock: clock)
    end

    # The one that comes first; nils (no such deadline) are ignored.
    def self.earliest(*deadlines) = deadlines.compact.min_by(&:at)

    def initialize(at, what, clock: CLOCK)
      @at = at
      @what = what
      @clock = clock
      freeze
    end

    def passed? = @clock.call > @at
    def left = [@at - @clock.call, 0.0].max
    def reason = "skipped: #{@what} passed"

    # For a scenario with its own loop (refork, arenas, leak): before each
    # trial, nil while settings.deadline has not passed; after, the trial's
    # record marked failed with the reason (and logged), in place of a run.
    def self.skipped(settings, label, record)
      deadline = settings.deadline
      return nil unless deadline&.passed?

      Log.warn("#{label}: #{deadline.reason}")
      record.merge(failed: deadline.reason)
    end
  end
end
