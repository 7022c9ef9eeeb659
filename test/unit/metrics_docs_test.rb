# frozen_string_literal: true

require "test_helper"
require "open3"
require "tmpdir"
require "spindle/metrics/report"

# docs/METRICS.md must match the code: every metric the code can emit is in
# its table, and the scrape config and alert rules it shows pass promtool.
class MetricsDocsTest < Minitest::Test
  DOC = File.expand_path("../../docs/METRICS.md", __dir__)
  PROMTOOL = "/usr/bin/promtool"

  def test_every_metric_the_code_emits_is_documented
    doc = File.read(DOC)
    emitted.each do |name|
      documented = doc.include?("`#{name}`") || doc.match?(/`#{name.sub(/_(rss|pss|uss)_bytes\z/, '_rss_bytes')}`, `_pss_bytes`/)
      assert documented, "#{name} is not in docs/METRICS.md's table"
    end
  end

  def test_the_scrape_config_and_the_alert_rules_pass_promtool
    skip "promtool is not installed (Debian's prometheus package; bin/test installs it)" unless File.executable?(PROMTOOL)
    config, rules = File.read(DOC).scan(/^```yaml\n(.*?)^```$/m).flatten
    Dir.mktmpdir("spindle-metrics-docs") do |dir|
      File.write(File.join(dir, "prometheus.yml"), config)
      File.write(File.join(dir, "spindle-alerts.yml"), rules)
      out, status = Open3.capture2e(PROMTOOL, "check", "config", File.join(dir, "prometheus.yml"))
      assert status.success?, "promtool check config:\n#{out}"
      out, status = Open3.capture2e(PROMTOOL, "check", "rules", File.join(dir, "spindle-alerts.yml"))
      assert status.success?, "promtool check rules:\n#{out}"
    end
  end

  private

  # The families of a cluster report with a mold: every name there is.
  def emitted
    snapshot = Spindle::Metrics::DurationHistogram::Snapshot.empty
    memory = { rss: 1, pss: 1, uss: 1 }
    worker = { "index" => 0, "state" => "serving", "generation" => 0, "booted_at" => "2026-01-01T00:00:00Z",
               "requests" => 0, "in_flight" => 0, "backlog" => 0, "last_checkin_age" => 0, "oldest_request_age" => 0,
               "memory" => memory, "gc" => { minor: 0, major: 0, heap_live_slots: 0 }, "restarts" => 0,
               "durations" => snapshot, "log_lines_dropped" => { "server" => 0, "access" => 0 } }
    stats = { "master" => { "generation" => 0, "refork_failures" => 0, "workers_desired" => 1,
                            "started_at" => "2026-01-01T00:00:00Z",
                            "memory" => memory }, "workers" => [worker], "mold" => { "memory" => memory } }
    Spindle::Metrics::Report.new(stats).to_s.scan(/^# TYPE (\S+)/).flatten
  end
end
