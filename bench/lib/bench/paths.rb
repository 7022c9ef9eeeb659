# frozen_string_literal: true

module Bench
  # Where things live. Everything the harness writes goes under bench/tmp/
  # (scratch: configs, logs, --quick reports) or docs/benchmarks/ (the kept
  # reports).
  module Paths
    BENCH = File.expand_path("../..", __dir__)
    ROOT = File.dirname(BENCH)
    TMP = File.join(BENCH, "tmp")
    APPS = File.join(BENCH, "apps")
    SCENARIOS = File.join(BENCH, "scenarios")
    GEMFILE = File.join(BENCH, "Gemfile")
    SERVER_GEMFILE = File.join(ROOT, "Gemfile")
    DOCS = File.join(ROOT, "docs", "benchmarks")
    DATA = File.join(DOCS, "data")
    QUICK = File.join(TMP, "quick") # --quick reports: a smoke run must not replace real figures

    # Where a run's reports go (JSON under data/, Markdown, SVG, index).
    def self.reports(quick) = quick ? QUICK : DOCS

    def self.relative(path)
      path.start_with?("#{ROOT}/") ? path.delete_prefix("#{ROOT}/") : path
    end
  end
end
