# frozen_string_literal: true

module Bench
  module Report
    # Number and cell formatting shared by the Markdown pages.
    module Format
      module_function

      def rps(value) = value.nil? ? "–" : integer(value.round)

      def integer(value)
        value.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
      end

      def ms(value) = value.nil? ? "–" : format("%.2f", value)

      def ratio(ratio)
        return "n/a" unless ratio

        sign = { ">=" => "≥", "<=" => "≤" }.fetch(ratio.qualifier, "")
        format("%s%.2f×", sign, ratio.value)
      end

      # A load-generator-bound figure is not the server's throughput: say so
      # and give only the lower bound wrk reached.
      def throughput(figure)
        return "**load-generator bound**" if figure.bound?

        rps(figure.median)
      end

      def spread(figure)
        return "wrk saturated at #{rps(figure.median)} (a lower bound)" if figure.bound?

        "#{rps(figure.min)}–#{rps(figure.max)}"
      end

      # a ÷ b as "1.23×", or "n/a" without both.
      def times(a, b) = a && b&.positive? ? format("%.2f×", a.to_f / b) : "n/a"

      # Bytes (or another unit: per: 1024.0 for KiB) as MiB: "12.3", or whole
      # with thousands separators; "–" without a figure.
      def mib(value, per: 1_048_576.0, whole: false)
        return "–" unless value

        whole ? integer((value / per).round) : format("%.1f", value / per)
      end

      def mib_kib(kib) = mib(kib, per: 1024.0)

      def row(cells) = "| #{cells.join(' | ')} |"

      def table(header, rows)
        [row(header), row(header.map { "---" }), *rows.map { |r| row(r) }].join("\n")
      end
    end
  end
end
