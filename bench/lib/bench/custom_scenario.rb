# frozen_string_literal: true

require "json"
require_relative "deadline"
require_relative "run_record"
require_relative "memory"
require_relative "stats"
require_relative "log"
require_relative "report/parts"

module Bench
  # What every scenario with its own runner (Scenario.define custom:) shares.
  # The run side: the record's common part (the scenario, the machine, the
  # load generator, Spindle's source at the start and the end) and one trial
  # at a time, skipped once the deadline has passed and recorded as failed
  # when it raises, so one bad trial never costs the others. The report side:
  # #render from the record alone (Report::Parts frames the page). A subclass
  # holds only its own trials (#trials -> { runs: [...] }), what it records of
  # its settings and servers, and its page's figures (.markdown, .chart).
  class CustomScenario
    F = Report::Format
    P = Report::Parts

    def initialize(scenario, settings)
      @scenario = scenario
      @settings = settings
    end

    def run
      RunRecord.around(@scenario, Versions.load_generator(1)) do
        trials = self.trials
        { settings: { quick: @settings.quick, **settings_record }, servers: servers_record, **trials, measurements: [] }
      end
    end

    class << self
      def render(record, json_name) = [markdown(record, json_name), chart(record)]
      def ok(record, key = :runs) = record[key].reject { |r| r[:failed] }
      def mb(bytes) = F.mib(bytes)
    end

    private

    def servers_record = [{ name: "spindle-threads", family: "spindle", version: Versions.spindle }]

    # base merged with what the block returns; the block gets the record so
    # far and may fill it as it goes (kept when a later step raises). Past
    # the deadline: base marked skipped, the block never runs.
    def trial(label, base)
      skipped = Deadline.skipped(@settings, "#{@scenario.name} #{label}", base) and return skipped

      partial = base.dup
      partial.merge(yield(partial))
    rescue StandardError => e
      Log.warn("#{@scenario.name} #{label}: #{e.class}: #{e.message}")
      (partial || base).merge(failed: "#{e.class}: #{e.message}")
    end

    # The scenario's own server names that --servers picks (names or globs).
    def picked(names)
      return names unless @settings.servers

      names.select { |n| @settings.servers.any? { |pattern| File.fnmatch(pattern, n) } }
    end
  end
end
