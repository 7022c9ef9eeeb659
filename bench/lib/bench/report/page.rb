# frozen_string_literal: true

require "shellwords"
require_relative "parts"
require_relative "tables"
require_relative "../bottleneck"

module Bench
  module Report
    # docs/benchmarks/SCENARIO.md: what was run, where, how, and the figures.
    class Page
      F = Format

      def initialize(summary, json_name)
        @summary = summary
        @record = summary.record
        @json_name = json_name
        @tables = Tables.new(summary)
      end

      def render
        [title, run_table, *scenario_sections, "## Headline", @tables.headline, *grids, servers, unavailable, failures,
         commands, rules].compact.join("\n\n") << "\n"
      end

      private

      def title
        s = @record[:scenario]
        Parts.title(@record, @json_name, goal_from: "shared/BENCHMARKS.md", about: " App: `#{s[:app]}`, request: `GET #{s[:path]}`.")
      end

      # Figures beyond wrk's that the scenario defines (Scenario report:).
      def scenario_sections
        own = Scenario.load_all[@record[:scenario][:name]]&.own(:sections)
        own ? Array(own.sections(@summary)) : []
      end

      WARM_POOLS = " (with several processes at 1.5 × processes × the highest connection count, so that every " \
                   "worker has opened its database connections before the rounds: bench/README.md)"

      def run_table
        s = @record[:settings]
        lg = @record[:load_generator]
        threaded = @record[:servers].select { |v| v[:threaded] }.map { |v| v[:name] }.join(", ")
        Parts.run_table(@record, [
          ["Load generator", "#{lg[:tool]}, **#{lg[:threads]} thread**, #{lg[:note]}"],
          ["Figures", "median of #{s[:rounds]} rounds of #{s[:duration_s]} s each, after a #{s[:warmup_s]} s warm-up " \
                      "per start#{WARM_POOLS if s[:warm_pools]}; #{Parts.interleaving(s)}; keep-alive; " \
                      "RACK_ENV=#{s[:rack_env]}"],
          ["Threads", "#{s[:threads_per_process]} per process for #{threaded}; the others have no thread setting"],
          ["Connections", s[:connections].join(", ")], ["Processes", s[:processes].join(", ")]
        ])
      end

      def grids
        @summary.processes.flat_map do |procs|
          ["## #{procs} process#{'es' unless procs == 1}",
           *@summary.connections.map { |c| "### c = #{c}\n\n#{@tables.cell(procs, c)}" }]
        end
      end

      def servers
        rows = @record[:servers].map do |v|
          [v[:name], v[:version], v[:model], v[:threaded] ? @record[:settings][:threads_per_process] : "–", v[:notes] || ""]
        end
        "## Servers\n\n#{F.table(%w[server version model threads notes], rows)}"
      end

      def unavailable
        Parts.listing("Unavailable", @record[:unavailable].map do |u|
          "- **#{u[:server]}**, #{u[:processes]} process(es): unavailable: #{u[:reason]}"
        end)
      end

      # Measurements that produced no figure: the server died, or wrk failed.
      def failures
        Parts.listing("Failed measurements", Parts.failed(@record[:measurements]) do |m|
          "**#{m[:server]}**, #{m[:processes]} process(es), round #{m[:round]}, c = #{m[:connections]}"
        end)
      end

      def commands
        Parts.commands(@record, @record[:measurements].reject { |m| m[:failed] }.map { |m| m[:wrk] })
      end

      def rules
        noisy = @record[:measurements].count { |m| Bottleneck.contended?(m[:cpu]) }
        <<~MD.chomp
          ## How to read this

          - Ratios compare medians. `× Spindle best` divides by the best Spindle engine's median in the same
            table (bold); `× nginx` by nginx's. `≥`/`≤` mark a ratio where one side is only a lower bound.
          - **load-generator bound**: in at least half the rounds wrk's threads were ≥ 90 % busy while the
            server used < 90 % of the cores left to it, so the figure measures wrk, not the server; only the
            lower bound is given. The rule is in `bench/lib/bench/bottleneck.rb` and `bench/README.md`.
          - `socket errors` are wrk's connect/read/write/timeout counts summed over the rounds; `status ≥ 400`
            is wrk's count of such responses (wrk does not count 3xx).
          - **contended** rounds: more than #{Bottleneck::OTHER_BUSY} of a core went to neither wrk nor the server
            (other work on this shared machine). #{noisy} of #{@record[:measurements].size} measurements in this run;
            they are kept (interleaving spreads them over all servers), and per-measurement CPU is in the JSON.
        MD
      end
    end
  end
end
