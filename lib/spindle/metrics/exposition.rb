# frozen_string_literal: true

module Spindle
  module Metrics
    # Prometheus's text exposition format, version 0.0.4: per metric family a
    # HELP line, a TYPE line, then its samples, each `name{label="value"} number`.
    # A family with no sample is left out whole (a HELP without samples is
    # legal, but says nothing).
    class Exposition
      CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

      def initialize
        @text = +""
      end

      # samples: [[labels Hash, value], ...]; a nil value is skipped (not known
      # yet, e.g. a worker that has not checked in).
      def family(name, type, help, samples)
        samples = samples.reject { |_, value| value.nil? }
        return self if samples.empty?

        header(name, type, help)
        samples.each { |labels, value| sample(name, labels, value) }
        self
      end

      # histograms: [[labels Hash, DurationHistogram::Snapshot], ...]
      def histogram(name, help, histograms)
        return self if histograms.empty?

        header(name, "histogram", help)
        histograms.each do |labels, snapshot|
          snapshot.cumulative.each { |bound, count| sample("#{name}_bucket", labels.merge("le" => number(bound)), count) }
          sample("#{name}_sum", labels, snapshot.sum)
          sample("#{name}_count", labels, snapshot.count)
        end
        self
      end

      def to_s = @text

      private

      def header(name, type, help)
        @text << "# HELP " << name << " " << help.gsub("\\", "\\\\\\\\").gsub("\n", "\\n") << "\n"
        @text << "# TYPE " << name << " " << type << "\n"
      end

      def sample(name, labels, value)
        @text << name
        unless labels.empty?
          @text << "{" << labels.map { |key, v| "#{key}=\"#{escape(v.to_s)}\"" }.join(",") << "}"
        end
        @text << " " << number(value) << "\n"
      end

      # Label values may hold backslashes, quotes and newlines, escaped so.
      def escape(value) = value.gsub(/[\\"\n]/, "\\" => "\\\\", "\"" => "\\\"", "\n" => "\\n")

      def number(value)
        case value
        when Float::INFINITY then "+Inf"
        when Integer then value.to_s
        when Float then value.nan? ? "NaN" : value.to_s.delete_suffix(".0") # shortest exact form; "1", not "1.0"
        when true, false then value ? "1" : "0"
        else raise ArgumentError, "not a sample value: #{value.inspect}"
        end
      end
    end
  end
end
