# frozen_string_literal: true

require "optparse"
require_relative "lane"

module Bench
  # The command line of bench/run, parsed into one frozen settings object.
  # Durations are whole seconds because wrk takes no finer unit.
  class Options
    FULL = { rounds: 3, duration: 5, warmup: 2 }.freeze
    QUICK = { rounds: 2, duration: 1, warmup: 1 }.freeze

    # given: the options the user passed (a --quick shape never overrides
    # them); deadline: the Bench::Deadline one scenario runs under, set by
    # Bench::QuickShape.settings_for before the scenario starts.
    Settings = Struct.new(:scenario, :servers, :quick, :rounds, :duration, :warmup,
                          :connections, :processes, :threads, :wrk_threads, :wrk_timeout,
                          :install, :render_only, :list, :deadline_minutes, :given, :deadline,
                          :ruby, :yjit, :profile, :alternate, keyword_init: true) do
      def with(**changes) = self.class.new(**to_h, **changes).freeze
      def given?(option) = given.to_a.include?(option)
    end

    USAGE = "Usage: bench/run SCENARIO|all [options]   (bench/run --list shows both lists)"

    def self.parse(argv)
      new.parse(argv)
    end

    def parse(argv)
      defaults = { servers: nil, quick: false, threads: 5, wrk_threads: 1, wrk_timeout: 5,
                   install: true, render_only: false, list: false, deadline_minutes: 180,
                   ruby: nil, yjit: nil, profile: false, alternate: false }
      values = {}
      rest = parser(values).parse(argv)
      raise OptionParser::ParseError, "one scenario at most, got #{rest.join(' ')}" if rest.size > 1

      given = values.keys.freeze
      values = defaults.merge(values)
      values[:list] ||= rest.empty?
      values[:yjit] = Lane.elsewhere?(values[:ruby]) if values[:yjit].nil? # the 3.3 and 3.4 lanes run with YJIT
      Settings.new(**(values[:quick] ? QUICK : FULL), **values, scenario: rest.first, given: given).freeze
    end

    private

    def parser(values)
      OptionParser.new do |o|
        o.banner = USAGE
        o.on("--servers LIST", Array, "Servers to run (names or globs: spindle-*,puma). Default: all.") { |v| values[:servers] = v }
        o.on("--quick", "A smoke run, not a result: #{QUICK[:duration]} s measurements and each scenario's small shape " \
                         "within its time budget; reports go to bench/tmp/quick/.") { values[:quick] = true }
        o.on("--rounds N", Integer, "Rounds per figure (default #{FULL[:rounds]}).") { |v| values[:rounds] = positive(v) }
        o.on("--alternate", "Start each server once per process count and keep it running: each round measures " \
                            "them in turn, seconds apart (the servers' rounds, not the custom scenarios').") do
          values[:alternate] = true
        end
        o.on("--duration S", Integer, "Seconds per measurement (default #{FULL[:duration]}).") { |v| values[:duration] = positive(v) }
        o.on("--warmup S", Integer, "Seconds of warm-up after each start (default #{FULL[:warmup]}).") { |v| values[:warmup] = positive(v) }
        o.on("--connections LIST", Array, "wrk -c values (default: the scenario's).") { |v| values[:connections] = integers(v) }
        o.on("--processes LIST", Array, "Process counts (default: the scenario's).") { |v| values[:processes] = integers(v) }
        o.on("--threads N", Integer, "Threads per process for threaded servers (default 5).") { |v| values[:threads] = positive(v) }
        o.on("--wrk-threads N", Integer, "wrk -t (default 1).") { |v| values[:wrk_threads] = positive(v) }
        o.on("--no-install", "Do not apt-get or bundle install; fail if something is missing.") { values[:install] = false }
        o.on("--render", "Only re-render the reports from the newest JSON of each scenario.") { values[:render_only] = true }
        o.on("--deadline MINUTES", Integer, "Stop starting new trials this long after the run starts (default 180; --quick: its budgets).") { |v| values[:deadline_minutes] = positive(v) }
        o.on("--ruby VERSION", Lane::RUBIES, "Run the servers on this Ruby (#{Lane::RUBIES.join(', ')}; default #{Lane::HERE}, " \
                                             "this machine's). 3.3 and 3.4 run in bin/test-ruby3.3's and bin/test-ruby3.4's chroots, YJIT on.") { |v| values[:ruby] = v }
        o.on("--[no-]yjit", "YJIT on (RUBY_YJIT_ENABLE=1) for every Ruby server (default: on with --ruby 3.3 or 3.4 only).") { |v| values[:yjit] = v }
        o.on("--profile", "rails, blog: also a CPU profile of the server process per engine, split into server and app code.") { values[:profile] = true }
        o.on("--list", "List scenarios and servers.") { values[:list] = true }
      end
    end

    def integers(list)
      list.map { |v| positive(Integer(v)) }
    end

    def positive(value)
      raise OptionParser::InvalidArgument, value.to_s unless value.positive?

      value
    end
  end
end
