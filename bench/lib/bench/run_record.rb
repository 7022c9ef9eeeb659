# frozen_string_literal: true

require "time"
require_relative "machine"
require_relative "versions"
require_relative "pg_support"

module Bench
  # The frame of every run's record (the JSON), whoever runs the scenario
  # (Runner or a CustomScenario): the scenario, when, on what machine, with
  # which load generator, and Spindle's source digest at the start and the end
  # (if it changed, the figures mix versions), and where the run's PostgreSQL
  # was scheduled if it started one. The block measures and returns the rest.
  module RunRecord
    def self.around(scenario, load_generator)
      started = Time.now
      source = Versions.spindle_source
      YjitCheck.reset # this scenario's servers only
      body = yield
      { scenario: scenario.to_record, started_at: started.iso8601, finished_at: Time.now.iso8601,
        machine: Machine.describe, load_generator: load_generator, **body, spindle_source: Versions.source_record(source),
        database: PgSupport.placement }.compact
    end
  end
end
