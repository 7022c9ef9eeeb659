# frozen_string_literal: true

require_relative "parts"

module Bench
  module Report
    # The scenario chart: one panel per process count, connection counts
    # along x, one bar per server (median, min–max whisker), hatched when the
    # figure is load-generator bound.
    module Chart
      # Spindle in blues, nginx in grey, peers in distinct warm/green hues.
      COLORS = {
        "spindle-blocking" => "#9ecae1", "spindle-threads" => "#3182bd", "spindle-fibers" => "#08519c",
        "spindle-hybrid" => "#17becf", "puma" => "#e6550d", "falcon" => "#31a354", "unicorn" => "#756bb1",
        "pitchfork" => "#bcbddc", "iodine" => "#e7ba52", "agoo" => "#ad494a", "nginx" => "#636363"
      }.freeze

      module_function

      def render(summary)
        r = summary.record
        scenario = Scenario.load_all[r[:scenario][:name]] # a scenario may name its own axes
        chart = Parts.chart(r, r[:scenario][:title], subtitle(r),
                            y_label: scenario&.own(:y_label)&.y_label || "requests/s (median; whisker: min–max)",
                            x_label: scenario&.own(:x_label)&.x_label || "concurrent connections (wrk -c)",
                            hatch_note: "hatched: load-generator bound (wrk saturated; a lower bound, not the server's figure)")
        summary.processes.each { |procs| chart.panel(panel_title(procs, r), groups: summary.connections.map(&:to_s), series: series(summary, procs)) }
        chart.render
      end

      def panel_title(procs, record)
        threads = record[:settings][:threads_per_process]
        "#{procs} process#{'es' unless procs == 1} (#{threads} threads each where threads apply)"
      end

      def subtitle(record)
        m = record[:machine]
        s = record[:settings]
        "#{m[:nproc]} cores shared with wrk (#{record[:load_generator][:threads]} thread) · " \
          "#{m[:ruby][/ruby \S+/]} · YJIT #{m.dig(:yjit, :enabled_for_servers) ? 'on' : 'off'} · #{s[:rounds]} rounds × #{s[:duration_s]} s"
      end

      def series(summary, procs)
        summary.server_names.filter_map do |name|
          figures = summary.connections.map { |c| summary.figures(procs, c).find { |f| f.server == name } }
          next if figures.compact.empty?

          { name: name, color: COLORS[name], values: figures.map { |f| f&.median },
            lows: figures.map { |f| f&.min }, highs: figures.map { |f| f&.max },
            hatched: figures.map { |f| f&.bound? } }
        end
      end
    end
  end
end
