# frozen_string_literal: true

module Bench
  # One entry of the server registry (bench/servers.rb): how to start a server
  # on a given port, thread count and process count. Everything else (waiting
  # for it, loading it, stopping it) is the same for every server.
  #
  # family      :spindle, :peer or :ceiling. Ratios are taken to the best
  #             :spindle entry and to the :ceiling (nginx).
  # runtime     :spindle (bin/spindle with the server's own Gemfile), :peers
  #             (bundle exec with bench/Gemfile) or :system (a Debian binary).
  # model       how one process serves requests, for the report.
  # threaded    true when the thread count applies (it is recorded as such).
  # command     ->(launch) { argv }, launch being a Bench::Launch.
  # version     -> { "1.2.3" }, asked once per run.
  # unavailable a reason when the server cannot run at all here.
  # root        -> { path }: the Spindle checkout a :spindle runtime runs
  #             from, when not this one (Bench::Baseline).
  ServerSpec = Struct.new(:name, :family, :runtime, :model, :threaded, :command, :version,
                          :ready_timeout, :unavailable, :notes, :root, keyword_init: true) do
    def initialize(ready_timeout: 30, threaded: false, unavailable: nil, notes: nil, root: nil, **rest)
      super
    end

    def spindle? = family == :spindle
    def ceiling? = family == :ceiling
  end
end
