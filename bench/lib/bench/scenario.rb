# frozen_string_literal: true

require_relative "paths"
require_relative "quick_shape"

module Bench
  # A scenario: the app served, the request made, the connection and process
  # counts, and how nginx (the ceiling) answers the same request. One file per
  # scenario under bench/scenarios/ calls Scenario.define.
  #
  # A scenario that measures something other than wrk throughput (memory
  # after refork, a database-bound app) passes its own trial class: anything
  # with `new(server:, settings:, scenario:)`, `#warm_up(connections)` and
  # `#measure(connections) -> Hash` like Bench::WrkTrial.
  class Scenario < Struct.new(:name, :title, :description, :app, :path, :connections, :processes, :expect_body,
                              :nginx, :servers, :trial, :goal, :env, :report, :threads, :custom, :server_args, :quick, :gemfile,
                              :warmup, :warm_pools, :min_ruby, :prepare, keyword_init: true)
    @all = {}

    class << self
      def define(**attributes)
        scenario = new(**attributes)
        raise ArgumentError, "scenario #{scenario.name} defined twice" if @all.key?(scenario.name)

        @all[scenario.name] = scenario
      end

      def load_all
        Dir[File.join(Paths::SCENARIOS, "*.rb")].sort.each { |file| require file }
        @all
      end

      def fetch(name)
        @all.fetch(name) { abort "bench: unknown scenario #{name} (known: #{@all.keys.join(', ')}, all)" }
      end
    end

    # nginx: ->(launch) { "location body" }, or nil when nginx cannot stand in
    # for the app (then the ceiling is left out of the scenario).
    # servers: the registry names (or globs) this scenario runs by default.
    # env: -> { { "NAME" => "value" } }, extra environment for every server
    # start (called at each start, so it may start what the app needs first).
    # report: an object answering #sections(summary) -> [Markdown], and
    # (or instead) #render(record, json_name) -> [markdown, svg] to replace
    # the generic page and chart altogether (slow_clients, soak, ...), and
    # optionally #x_label / #y_label for the chart, for figures beyond wrk's.
    # custom: a scenario that is not a wrk-throughput grid at all (memory over
    # time, refork): a Bench::CustomScenario subclass, whose
    # new(scenario, settings).run -> record (the JSON), and whose class answers
    # .render(record, json_name) -> [markdown, svg] and .headline(record).
    # bench/run then calls it instead of Bench::Runner and its page/chart.
    # threads: { "server-name" => N }, a thread count for that server in this
    # scenario instead of --threads (e.g. hybrid's fiber-loop threads).
    # gemfile: a bundle every Ruby server runs this scenario's app under
    # (Spindle and peers alike), for an app with gems of its own (Rails).
    # warmup: seconds of warm-up after each start when --warmup is not given
    # (a full run; default the run's, 2 s), for an app slow to get warm.
    # warm_pools: the app opens a database connection per request in flight
    # in its process, lazily (Rails 7.1+), so with several processes the
    # warm-up runs at more connections (WrkTrial#warm_up_connections) and
    # every process's pool is open before the rounds measure.
    # min_ruby: the oldest Ruby the app runs on ("3.2" for Rails 8): on an
    # older one bench/run refuses the scenario (#refusal) rather than fail
    # to bundle it.
    # quick: the scenario's shape under --quick (see Bench::QuickShape):
    # { servers:, connections:, processes:, rounds:, budget_s: }, each key
    # optional and used only where the user did not pass the flag.
    DEFAULTS = { description: "", path: "/", connections: [16, 64, 256], processes: [1, 2], quick: {} }.freeze

    def initialize(**attributes)
      super(**DEFAULTS, **attributes)
      self.title ||= name
      self.quick = QuickShape.check(name, quick)
      connections.freeze
      processes.freeze
      freeze
    end

    def rackup = File.join(Paths::APPS, app)

    # The Gemfile its peers run under: its own (gemfile:, which Spindle runs
    # under too), else bench/Gemfile.
    def bundle = gemfile || Paths::GEMFILE

    # What every run's record says of its scenario.
    def to_record = { name: name, title: title, description: description, goal: goal, app: "bench/apps/#{app}", path: path }

    # Extra flags this scenario needs on the servers matching a glob (e.g. a
    # higher connection cap for 10,000 idle connections); recorded in the
    # report's commands like every other flag.
    def server_args_for(server_name)
      (server_args || {}).select { |glob, _| File.fnmatch(glob, server_name) }.values.flatten.map(&:to_s)
    end

    # What writes this scenario's own page part (method :render, :headline,
    # :sections, :x_label...) instead of the generic one: its custom runner
    # or its report; nil: the generic one.
    def own(method) = [custom, report].find { |o| o.respond_to?(method) }

    # Whether this run of it may start a peer server (bench/Gemfile's :peers
    # group must then be installed first): what --servers, the --quick shape
    # or the scenario picks, among the registry's or its custom runner's own.
    def peers?(settings)
      runtimes = if custom then (custom.const_defined?(:SERVERS) ? custom::SERVERS : {}).transform_values { |s| s[:runtime] }
                 else SERVERS.to_h { |s| [s.name, s.runtime] }
                 end
      names = settings.servers || (quick[:servers] if settings.quick) || servers || runtimes.keys
      names.any? { |glob| runtimes.any? { |name, runtime| runtime == :peers && File.fnmatch(glob, name) } }
    end

    # Why this Ruby cannot run it (one line), or nil.
    def refusal(ruby = RUBY_VERSION)
      return unless min_ruby && Gem::Version.new(ruby) < Gem::Version.new(min_ruby)

      "needs Ruby #{min_ruby} or later, this is #{ruby}: run it on another (bench/run --ruby 3.4 #{name})"
    end

    def nginx_location(launch)
      nginx or raise ArgumentError, "scenario #{name} has no nginx equivalent"
      nginx.call(launch)
    end

    def supports?(spec)
      !spec.ceiling? || !nginx.nil?
    end
  end
end
