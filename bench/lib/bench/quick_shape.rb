# frozen_string_literal: true

require_relative "deadline"

module Bench
  # --quick is a smoke run of the harness, not a result (every quick report
  # says so): each scenario runs end to end, but on a small shape of its own
  # (a few servers, one connection count, one process count, fewer rounds)
  # and within a time budget, so that `bench/run all --quick` takes minutes.
  # A scenario gives its shape as `quick:` in Scenario.define; a flag the user
  # passed (--servers, --connections, --processes, --rounds) always wins.
  #
  # The budget is a deadline like --deadline: once it has passed, the
  # scenario starts no new trial (the rest are reported "skipped: ...").
  module QuickShape
    # The quick: keys that stand in for the flag of the same name.
    FLAGS = %i[servers connections processes rounds].freeze
    KEYS = [*FLAGS, :budget_s].freeze
    BUDGET_S = 45 # a scenario's budget under --quick unless it sets budget_s
    RUN_BUDGET_S = 510 # the whole run's under --quick (8.5 min) unless --deadline is given

    module_function

    def check(name, shape)
      unknown = shape.keys - KEYS
      raise ArgumentError, "scenario #{name}: unknown quick: #{unknown.join(', ')} (known: #{KEYS.join(', ')})" unless unknown.empty?

      shape.freeze
    end

    # The deadline of the whole bench/run, from the moment it holds the lock.
    def run_deadline(settings, clock: Deadline::CLOCK)
      if settings.quick && !settings.given?(:deadline_minutes)
        Deadline.after(RUN_BUDGET_S, "the --quick run's budget (#{RUN_BUDGET_S} s)", clock: clock)
      else
        Deadline.after(settings.deadline_minutes * 60, "the run's --deadline (#{settings.deadline_minutes} min)", clock: clock)
      end
    end

    # The settings one scenario runs with: under --quick its shape where the
    # user passed no flag, and the earlier of the run's deadline and its own
    # budget (counted from now, when the scenario starts).
    def settings_for(scenario, settings, run_deadline, clock: Deadline::CLOCK)
      return settings.with(deadline: run_deadline) unless settings.quick

      shape = scenario.quick
      filled = FLAGS.select { |flag| shape.key?(flag) && !settings.given?(flag) }.to_h { |flag| [flag, shape[flag]] }
      budget = budget_s(scenario)
      own = Deadline.after(budget, "the #{scenario.name} scenario's --quick budget (#{budget} s)", clock: clock)
      settings.with(**filled, deadline: Deadline.earliest(run_deadline, own))
    end

    def budget_s(scenario) = scenario.quick.fetch(:budget_s, BUDGET_S)
  end
end
