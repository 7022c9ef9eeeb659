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
  # explicit    true: picked only by its exact name, never by a glob, so
  #             that a variant (a non-default flag) runs only when asked for.
  ServerSpec = Struct.new(:name, :family, :runtime, :model, :threaded, :command, :version,
                          :ready_timeout, :unavailable, :notes, :root, :explicit, keyword_init: true) do
    def initialize(ready_timeout: 30, threaded: false, unavailable: nil, notes: nil, root: nil, explicit: false, **rest)
      super
    end

    # Whether a --servers pattern (a name or a glob) picks this server.
    def picked_by?(pattern) = explicit ? pattern == name : File.fnmatch(pattern, name)

    def spindle? = family == :spindle
    def ceiling? = family == :ceiling
  end
end
