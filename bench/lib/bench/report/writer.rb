# frozen_string_literal: true

require "json"
require "fileutils"
require_relative "../paths"
require_relative "../summary"
require_relative "../scenario"
require_relative "page"
require_relative "chart"
require_relative "index"
require_relative "runs"

module Bench
  module Report
    # Files a run leaves in docs/benchmarks/ (a --quick run: bench/tmp/quick/,
    # see Paths.reports): the raw JSON in data/ (kept, one per run), and the
    # scenario's Markdown and SVG plus the index (regenerated). Reports are
    # always rendered from the JSON as written, so a re-render
    # (bench/run SCENARIO --render) gives the same page.
    module Writer
      module_function

      def write(record, dir: Paths::DOCS)
        data = File.join(dir, "data")
        FileUtils.mkdir_p(data)
        stamp = Time.parse(record[:started_at]).strftime("%Y%m%d-%H%M%S")
        path = File.join(data, "#{record[:scenario][:name]}-#{stamp}.json")
        File.write(path, "#{JSON.pretty_generate(record)}\n")
        render(path)
        path
      end

      # The pages go two levels up from the JSON (DIR/data/NAME-STAMP.json).
      def render(json_path)
        dir = File.dirname(json_path, 2)
        summary = load(json_path)
        name = summary.record[:scenario][:name]
        custom = Scenario.load_all[name]&.own(:render) # a scenario with its own page
        markdown, svg = if custom then custom.render(summary.record, File.basename(json_path))
                        else [Page.new(summary, File.basename(json_path)).render, Chart.render(summary)]
                        end
        File.write(File.join(dir, "#{name}.md"), markdown)
        File.write(File.join(dir, "#{name}.svg"), svg)
        write_index(dir)
      end

      def render_latest(name, dir: Paths::DOCS)
        path = latest(name, dir) or abort "bench: no data for #{name} in #{Paths.relative(File.join(dir, 'data'))}"
        render(path)
        path
      end

      def write_index(dir)
        scenarios = Scenario.load_all
        latest = scenarios.keys.filter_map { |name| (path = latest(name, dir)) && [name, [File.basename(path), load(path)]] }.to_h
        File.write(File.join(dir, "README.md"), Index.new(scenarios, latest).render)
      end

      # The newest run of a scenario: file names sort by their timestamp.
      def latest(name, dir)
        Runs.of(name, File.join(dir, "data")).first
      end

      def load(path)
        Summary.new(JSON.parse(File.read(path), symbolize_names: true), path)
      end
    end
  end
end
