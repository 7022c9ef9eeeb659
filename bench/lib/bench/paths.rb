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
    # On Ruby 3.2 and later (bench/run --ruby 3.3 or 3.4 runs the harness in
    # that Ruby's chroot) each of bench's Gemfiles is resolved with a
    # lockfile of its own, beside it in ruby3.3/: 3.1's locks pin Falcon and
    # async lower, and Bundler would rewrite them in the checkout. The 3.4
    # lane shares 3.3's bench locks: they hold the newest Puma and Falcon,
    # which run on both.
    LANE = RUBY_VERSION < "3.2" ? nil : "ruby3.3"
    def self.lane_gemfile(gemfile) = LANE ? File.join(File.dirname(gemfile), LANE, "Gemfile") : gemfile

    GEMFILE = lane_gemfile(File.join(BENCH, "Gemfile"))
    # The server's own one: bin/test-ruby<version> writes it in
    # tmp/ruby<version>/, one per lane (the 3.4 lane resolves the newest gems).
    SERVER_LANE = RUBY_VERSION < "3.2" ? nil : "ruby#{RUBY_VERSION[/\A\d+\.\d+/]}"
    SERVER_GEMFILE = File.join(ROOT, *(SERVER_LANE ? ["tmp", SERVER_LANE] : []), "Gemfile")
    # The real-app scenarios' bundle (rails, blog): the apps' gems and every server.
    APPS_GEMFILE = lane_gemfile(File.join(APPS, "bundle", "Gemfile"))
    # The rails8 scenario's: test/apps/rails8's gems and the peers. Rails 8
    # needs Ruby 3.2, so it has one lock only, for the 3.3 and 3.4 lanes.
    RAILS8_GEMFILE = File.join(APPS, "rails8", "Gemfile")
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
