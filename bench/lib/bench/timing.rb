# frozen_string_literal: true

require_relative "deadline"
require_relative "log"

module Bench
  # How long each scenario of a bench/run took: one line as each ends, and
  # all of them with the total at the end, so what `bench/run all` costs is
  # in its log.
  class Timing
    Row = Struct.new(:name, :seconds, :outcome)

    attr_reader :rows

    def initialize(clock: Deadline::CLOCK)
      @clock = clock
      @started = clock.call
      @rows = []
    end

    # Times the block; its value is the outcome shown beside the time
    # ("ok", "failed: ...").
    def time(name)
      started = @clock.call
      outcome = "did not finish"
      outcome = yield
    ensure
      row = Row.new(name, @clock.call - started, outcome)
      @rows << row
      Log.info("#{name}: #{self.class.duration(row.seconds)}, #{outcome}")
    end

    def total = @clock.call - @started

    def lines
      width = [*@rows.map { |r| r.name.size }, 5].max
      [*@rows, Row.new("total", total, "")].map { |r| "#{r.name.ljust(width)}  #{line(r)}".rstrip }
    end

    def report
      Log.info("elapsed per scenario:")
      lines.each { |l| Log.info("  #{l}") }
    end

    def self.duration(seconds)
      minutes, rest = seconds.divmod(60)
      minutes.zero? ? format("%.1f s", rest) : format("%d min %04.1f s", minutes, rest)
    end

    private

    def line(row) = "#{self.class.duration(row.seconds).rjust(11)}  #{row.outcome}"
  end
end
