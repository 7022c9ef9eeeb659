# frozen_string_literal: true

require_relative "format"

module Bench
  module Report
    # The figure tables of a scenario page, built from a Summary.
    class Tables
      F = Format
      HEADER = ["server", "req/s (median)", "min–max", "× Spindle best", "× nginx",
                "p50 ms", "p99 ms", "p99.9 ms", "socket errors", "status ≥ 400", "rounds"].freeze

      def initialize(summary)
        @summary = summary
      end

      # One table per connection count: every server's figure and ratios.
      def cell(processes, connections)
        best = @summary.spindle_best(processes, connections)
        ceiling = @summary.ceiling(processes, connections)
        rows = @summary.figures(processes, connections).map do |f|
          name = f.equal?(best) ? "**#{f.server}**" : f.server
          [name, F.throughput(f), F.spread(f), F.ratio(@summary.ratio(f, best)), F.ratio(@summary.ratio(f, ceiling)),
           F.ms(f.p50), F.ms(f.p99), F.ms(f.p999), f.errors, f.bad_status, rounds(f)]
        end
        F.table(HEADER, rows)
      end

      # The goal at a glance: Spindle's best engine against Puma, Falcon and
      # nginx, and whether every Spindle engine's median beat both Puma's and
      # Falcon's medians.
      def headline
        rows = @summary.processes.flat_map do |procs|
          @summary.connections.filter_map { |c| headline_row(procs, c) }
        end
        F.table(["processes", "c", "Spindle best", "req/s", "× Puma", "× Falcon", "× nginx",
                 "every Spindle engine ahead of Puma and Falcon"], rows)
      end

      private

      def headline_row(procs, connections)
        best = @summary.spindle_best(procs, connections) or return nil
        figures = @summary.figures(procs, connections)
        peer = ->(name) { figures.find { |f| f.server == name } }
        ratio = ->(name) { F.ratio(@summary.ratio(best, peer.call(name))) }
        [procs, connections, best.server, F.throughput(best), ratio.call("puma"), ratio.call("falcon"),
         F.ratio(@summary.ratio(best, @summary.ceiling(procs, connections))), ahead(figures)]
      end

      def ahead(figures)
        rivals = figures.select { |f| %w[puma falcon].include?(f.server) }
        engines = figures.select(&:spindle?)
        return "n/a" if rivals.empty? || engines.empty?

        behind = engines.reject { |e| rivals.all? { |r| e.median > r.median } }
        behind.empty? ? "yes" : "no: #{behind.map(&:server).join(', ')} behind"
      end

      def rounds(figure)
        extra = []
        extra << "#{figure.bound_rounds} bound" if figure.bound_rounds.positive?
        extra << "#{figure.failed_rounds} failed" if figure.failed_rounds.positive?
        extra << "#{figure.contended_rounds} contended" if figure.contended_rounds.positive?
        extra.empty? ? figure.rounds.to_s : "#{figure.rounds} (#{extra.join(', ')})"
      end
    end
  end
end
