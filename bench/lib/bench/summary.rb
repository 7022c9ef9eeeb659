# frozen_string_literal: true

require_relative "stats"
require_relative "bottleneck"

module Bench
  # Turns a run's raw rounds into the reported figures: per server, process
  # count and connection count, the median of the rounds with min and max,
  # and ratios to Spindle's best engine and to nginx. Works on the JSON record
  # alone, so reports can be re-rendered without measuring again.
  class Summary
    # A figure is load-generator bound when at least half its rounds were.
    Figure = Struct.new(:server, :family, :processes, :connections, :median, :min, :max, :rounds,
                        :bound_rounds, :contended_rounds, :failed_rounds, :p50, :p99, :p999, :errors, :bad_status,
                        keyword_init: true) do
      def bound? = rounds.positive? && bound_rounds * 2 >= rounds
      def spindle? = family == "spindle"
      def ceiling? = family == "ceiling"
    end

    # qualifier: "" exact, ">=" or "<=" when one side is a lower bound only.
    Ratio = Struct.new(:value, :qualifier)

    # source: the JSON file the record was read from (nil: built in memory).
    attr_reader :record, :source

    def initialize(record, source = nil)
      @record = record
      @source = source
      @families = record[:servers].to_h { |s| [s[:name], s[:family].to_s] }
      @figures = build
    end

    def processes = record[:settings][:processes]
    def connections = record[:settings][:connections]
    def server_names = record[:servers].map { |s| s[:name] }

    # Figures for one cell of the grid, in registry order (missing servers skipped).
    def figures(processes, connections)
      server_names.filter_map { |name| @figures[[name, processes, connections]] }
    end

    def spindle_best(processes, connections)
      figures(processes, connections).select(&:spindle?).max_by(&:median)
    end

    def ceiling(processes, connections)
      figures(processes, connections).find(&:ceiling?)
    end

    # The measured rounds behind a figure (a scenario's own columns read them).
    def rounds(server, processes, connections) = @rounds.fetch([server, processes, connections], [])

    def ratio(figure, reference)
      return nil unless figure && reference&.median&.positive?
      return nil if figure.bound? && reference.bound? && !figure.equal?(reference)

      qualifier = if figure.equal?(reference) then ""
                  elsif figure.bound? then ">="
                  elsif reference.bound? then "<="
                  else ""
                  end
      Ratio.new(figure.median.to_f / reference.median, qualifier)
    end

    private

    def build
      failed, @rounds = record[:measurements].partition { |m| m[:failed] }
                                             .map { |list| list.group_by { |m| m.values_at(:server, :processes, :connections) } }
      @rounds.to_h { |key, rounds| [key, figure(key, rounds, failed.fetch(key, []).size)] }
    end

    def figure(key, rounds, failed)
      rps = rounds.map { |m| m[:requests_per_sec] }
      latency = ->(k) { Stats.median(rounds.map { |m| m[:latency_ms][k] }) }
      Figure.new(server: key[0], family: @families[key[0]], processes: key[1], connections: key[2],
                 median: Stats.median(rps), min: rps.min, max: rps.max, rounds: rounds.size,
                 bound_rounds: rounds.count { |m| m[:load_generator_bound] }, failed_rounds: failed,
                 contended_rounds: rounds.count { |m| Bottleneck.contended?(m[:cpu]) },
                 p50: latency.call(:p50), p99: latency.call(:p99), p999: latency.call(:p999),
                 errors: rounds.sum { |m| m[:errors].values.sum }, bad_status: rounds.sum { |m| m[:bad_status] })
    end
  end
end
