# frozen_string_literal: true

module Spindle
  module Metrics
    # How long requests took, in fixed buckets: Prometheus's default bounds,
    # which span a fast JSON answer to a slow report. Fixed, so every worker's
    # buckets line up and a scrape can be summed across workers.
    #
    # #observe runs once per request, on the thread that served it (under
    # RequestTracker's lock when several threads serve): it only
    # compares Floats and adds to Integers, so it allocates nothing (a Float
    # in this range is an immediate value on 64-bit Ruby). Cumulative counts,
    # which the exposition wants, are computed when scraped, not per request.
    class DurationHistogram
      BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0].freeze
      LAST = BOUNDS.size

      # counts: per bucket, not cumulative; the last one is above every bound
      # (+Inf). sum: seconds. Crosses to the master inside a worker's check-in.
      Snapshot = Struct.new(:counts, :sum) do
        def self.empty = new(Array.new(LAST + 1, 0), 0.0)

        def count = counts.sum

        # [[bound, requests at or below it], ..., [Float::INFINITY, count]]
        def cumulative
          total = 0
          (BOUNDS + [Float::INFINITY]).each_with_index.map { |bound, i| [bound, total += counts[i]] }
        end
      end

      def initialize
        @counts = Array.new(LAST + 1, 0)
        @sum = 0.0
      end

      # A bucket holds durations up to and including its bound (Prometheus's `le`).
      def observe(seconds)
        i = 0
        i += 1 while i < LAST && seconds > BOUNDS[i]
        @counts[i] += 1
        @sum += seconds
      end

      def snapshot = Snapshot.new(@counts.dup, @sum)
    end
  end
end
