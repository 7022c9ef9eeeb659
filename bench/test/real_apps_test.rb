# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require "json"
require_relative "../lib/bench"

# The real-app scenarios (rails, rails-show, blog, rails-per-gb, issue 16; rails8, issue 67):
# their definitions, the profile split, and their pages from records alone.
class RealAppsTest < Minitest::Test
  SCENARIOS = Bench::Scenario.load_all

  def test_the_real_app_scenarios_run_every_server_under_the_apps_bundle
    %w[rails rails-show blog rails-per-gb].each do |name|
      scenario = SCENARIOS.fetch(name)
      assert_equal Bench::Paths::APPS_GEMFILE, scenario.bundle, name
    end
    assert_equal Bench::Paths::GEMFILE, SCENARIOS.fetch("hello").bundle
    assert_equal %w[/posts /posts/1 /], %w[rails rails-show blog].map { |n| SCENARIOS.fetch(n).path }
  end

  # The bundle every server runs the apps under names every gem the Rails
  # app's own Gemfile names, and its lock holds the same Rails as the app's.
  def test_the_apps_bundle_is_the_rails_app_s_gems_plus_the_servers
    gems = ->(file) { File.read(file).scan(/^gem "([^"]+)"/).flatten }
    app = File.join(Bench::Paths::ROOT, "test", "apps", "rails", "Gemfile")
    bundle = File.join(Bench::Paths::APPS, "bundle", "Gemfile")
    assert_empty gems.call(app) - gems.call(bundle)
    assert_includes gems.call(bundle), "stackprof"
    rails = ->(file) { File.read("#{file}.lock")[/^    railties \(([^)]+)\)$/, 1] }
    assert_equal rails.call(app), rails.call(bundle)
  end

  # rails8: every server under one bundle, test/apps/rails8's own Gemfile
  # (evaluated, not copied) plus the peers, locked to the app's Rails; and
  # refused in one line on a Ruby older than Rails 8 allows.
  def test_the_rails8_bundle_is_the_rails8_app_s_gemfile_plus_the_servers
    scenario = SCENARIOS.fetch("rails8")
    assert_equal Bench::Paths::RAILS8_GEMFILE, scenario.bundle
    assert_equal "/posts", scenario.path
    gemfile = File.read(Bench::Paths::RAILS8_GEMFILE)
    app = File.join(Bench::Paths::ROOT, "test", "apps", "rails8", "Gemfile")
    assert_equal app, File.expand_path(gemfile[/^eval_gemfile "([^"]+)"$/, 1], File.dirname(Bench::Paths::RAILS8_GEMFILE))
    assert_empty %w[puma falcon stackprof] - gemfile.scan(/^gem "([^"]+)"/).flatten
    rails = ->(file) { File.read("#{file}.lock")[/^    railties \(([^)]+)\)$/, 1] }
    assert_equal rails.call(app), rails.call(Bench::Paths::RAILS8_GEMFILE)
    assert_match(/\Aneeds Ruby 3\.2 or later, this is 3\.1\.2: /, scenario.refusal("3.1.2"))
    assert_nil scenario.refusal("3.4.1")
    assert_nil SCENARIOS.fetch("rails").refusal("3.1.2")
  end

  # Stacks are root first; a sample belongs to its innermost frame of a known
  # kind, so a C method or Ruby's library counts for its caller.
  FRAMES = {
    1 => { name: "<main>", file: "/repo/bin/spindle" },
    2 => { name: "Spindle::Engine::Outbox#write", file: "/repo/lib/spindle/engine/outbox.rb" },
    3 => { name: "IO#write_nonblock", file: "<cfunc>" },
    4 => { name: "ActionController::Metal#dispatch", file: "/gems/3.1.0/gems/actionpack-7.2.4/lib/x.rb" },
    5 => { name: "Monitor#synchronize", file: "/usr/lib/ruby/3.1.0/monitor.rb" },
    6 => { name: "(garbage collection)", file: "" },
    7 => { name: "Rack::Headers#[]=", file: "/gems/3.1.0/gems/rack-3.2.8/lib/rack/headers.rb" },
    8 => { name: "Thread#join", file: "<cfunc>" },
    9 => { name: "Rack::Session#call", file: "/gems/3.1.0/gems/rack-session-2.1.2/lib/rack/session.rb" }
  }.freeze

  def test_profile_split_classifies_by_the_innermost_known_frame
    raw = [3, 1, 2, 3, 5,      # Spindle writing: server
           4, 1, 2, 4, 5, 7,   # Rails inside Spindle, in the stdlib: app
           2, 1, 6, 2,         # GC
           3, 1, 4, 7, 1,      # Rack called from Rails: server, as the task counts Rack
           2, 8, 5, 3,         # no known frame: other
           2, 1, 9, 4]         # rack-session is the app's, not Rack's
    split = Bench::ProfileSplit.split(frames: FRAMES, raw: raw)
    assert_equal({ samples: 22, server: 6, app: 11, gc: 2, other: 3 }, split.except(:top_server))
    assert_equal [["Spindle::Engine::Outbox#write", 5], ["Rack::Headers#[]=", 1]], split[:top_server]
  end

  def test_profile_sums_every_process
    a = { samples: 10, server: 4, app: 5, gc: 1, other: 0, top_server: [["x", 3], ["y", 1]] }
    b = { samples: 6, server: 2, app: 2, gc: 0, other: 2, top_server: [["y", 4]] }
    sum = Bench::Profile.sum([a, b])
    assert_equal [16, 6, 7, 1, 2, 2], sum.values_at(:samples, :server, :app, :gc, :other, :processes)
    assert_equal [["y", 5], ["x", 3]], sum[:top_server]
  end

  def measurement(server, rps, p99, profile: nil)
    { server: server, processes: 1, connections: 16, requests_per_sec: rps, profile: profile,
      latency_ms: { p50: 1.0, p99: p99, p999: p99 }, errors: { connect: 0, read: 0, write: 0, timeout: 0 },
      bad_status: 0, load_generator_bound: false, cpu: { other_cores: 0.0 } }
  end

  # A run's JSON in dir, as bench/run writes it: spindle-threads at 240 req/s, Puma at puma.
  def write_run(dir, stamp, ruby, puma)
    path = File.join(dir, "rails-#{stamp}.json")
    record = { scenario: { name: "rails" }, started_at: stamp, machine: { ruby: ruby, yjit: {} },
               servers: [{ name: "spindle-threads", family: "spindle" }, { name: "puma", family: "peer" }],
               settings: { processes: [1], connections: [16] },
               measurements: [measurement("spindle-threads", 240, 50.0), measurement("puma", puma, 60.0)] }
    File.write(path, JSON.generate(record))
    path
  end

  def summary(measurements, peers: %w[puma falcon])
    servers = [%w[spindle-threads spindle], *peers.map { |p| [p, "peer"] }]
    Bench::Summary.new(servers: servers.map { |n, f| { name: n, family: f } },
                       settings: { processes: [1], connections: [16] }, measurements: measurements)
  end

  def test_the_page_puts_every_server_against_puma_and_falcon_with_p99
    split = { samples: 100, server: 20, app: 70, gc: 10, other: 0, top_server: [["Spindle::Engine::Outbox#write", 9]] }
    sections = Bench::RealAppReport.sections(summary([measurement("spindle-threads", 240, 50.0, profile: split),
                                                      measurement("puma", 200, 60.0), measurement("falcon", 160, 40.0)]))
    against, profile = sections
    assert_includes against, "| spindle-threads | 1 | 16 | 240 | 50.00 | 1.20× | ≤ (60.00) | 1.50× | > (40.00) |"
    assert_includes profile, "| spindle-threads | 1 | 16 | 100 | 20.0 % | 70.0 % | 10.0 % | 0.0 % | Spindle::Engine::Outbox#write (9) |"
  end

  def test_puma_on_jemalloc_gets_its_columns_when_it_ran
    against, = Bench::RealAppReport.sections(summary([measurement("spindle-threads", 240, 50.0), measurement("puma", 200, 60.0),
                                                      measurement("puma-jemalloc", 220, 55.0)], peers: %w[puma puma-jemalloc]))
    assert_includes against, "## Against Puma, Puma on jemalloc\n"
    assert_includes against, "| spindle-threads | 1 | 16 | 240 | 50.00 | 1.20× | ≤ (60.00) | 1.09× | ≤ (55.00) |"
  end

  def test_the_page_shows_the_newest_run_on_the_other_ruby_beside_its_own
    Dir.mktmpdir do |dir|
      write_run(dir, "20261101-000000", "ruby 3.3.8 (old)", 100)
      write_run(dir, "20261102-000000", "ruby 3.3.8 (newer)", 200)
      write_run(dir, "20261103-000000", "ruby 3.1.2p20 (an older 3.1 run)", 150)
      mine = write_run(dir, "20261104-000000", "ruby 3.1.2p20", 120)
      _, other = Bench::RealAppReport.sections(Bench::Report::Writer.load(mine))
      assert_includes other, "## On Ruby 3.3 (YJIT off): the newest run there"
      assert_includes other, "[data/rails-20261102-000000.json]"
      assert_includes other, "| spindle-threads | 1 | 16 | 240 | 50.00 | 1.20× | ≤ (60.00) |"
    end
  end

  def test_no_other_ruby_section_when_every_run_had_the_same_ruby
    Dir.mktmpdir do |dir|
      write_run(dir, "20261101-000000", "ruby 3.1.2p20", 100)
      mine = write_run(dir, "20261102-000000", "ruby 3.1.2p20", 120)
      assert_nil Bench::RealAppReport.other_ruby(Bench::Report::Writer.load(mine))
    end
    assert_nil Bench::RealAppReport.other_ruby(summary([measurement("puma", 200, 60.0)])), "a record read from no file"
  end

  def test_no_profile_section_without_a_profiled_run
    assert_equal 1, Bench::RealAppReport.sections(summary([measurement("puma", 200, 60.0)])).size
  end

  def per_gb_record
    run = lambda do |server, rps, pss|
      { server: server, round: 1, requests_per_sec: rps, total_pss: pss, per_gib: (rps / (pss / 1024.0**3)).round(1),
        reforked: true, command: "#{server} ..." }
    end
    { scenario: SCENARIOS.fetch("rails-per-gb").to_record, started_at: "2026-11-23T06:00:00+00:00",
      finished_at: "2026-11-23T06:10:00+00:00",
      machine: { nproc: 2, cpu: "cpu", memory_gib: 8, kernel: "Linux", os: "Debian", ruby: "ruby 3.3.8 +YJIT",
                 yjit: { enabled_for_servers: true, available: true } },
      load_generator: { tool: "wrk 4.1.0" },
      settings: { quick: false, workers: 4, threads_per_process: 5, connections: 16, duration_s: 5, path: "/posts" },
      servers: [{ name: "spindle", refork: "spindlectl" }, { name: "spindle-fibers", refork: "spindlectl" },
                { name: "puma", refork: "SIGURG" }],
      runs: [run.call("spindle", 300.0, 512 * 1024**2), run.call("spindle-fibers", 240.0, 256 * 1024**2),
             run.call("puma", 200.0, 512 * 1024**2)] }
  end

  def test_per_gb_page_divides_req_s_by_total_pss_and_rates_every_spindle_engine
    page, svg = Bench::RailsPerGb.render(per_gb_record, "rails-per-gb-x.json")
    assert_includes page, "| spindle (threads) | 300 | 512.0 | **600.0** | yes | 1 |"
    assert_includes page, "| spindle-fibers | 240 | 256.0 | **960.0** | yes | 1 |"
    assert_includes page, "| puma | 200 | 512.0 | **400.0** | yes | 1 |"
    assert_includes page, "| spindle-fibers | puma | 2.40× | **met** (≥ 1.3×) |"
    assert_includes page, "| spindle (threads) | puma | 1.50× | **met** (≥ 1.3×) |"
    assert_includes page, "| Refork | spindle, spindle-fibers: spindlectl; puma: SIGURG |"
    assert_includes page, "ruby 3.3.8 +YJIT; YJIT on for every server (RUBY_YJIT_ENABLE=1)"
    assert_match(/<svg .*<\/svg>/m, svg)
    assert_equal "req/s per GiB of PSS, 4 Rails workers after a refork: spindle (threads) 600, spindle-fibers 960, puma 400 " \
                 "(Spindle's best, spindle-fibers: 2.40× puma)",
                 Bench::RailsPerGb.headline(per_gb_record)
  end

  def test_puma_on_jemalloc_is_a_reference_without_a_target
    record = per_gb_record
    record[:servers] << { name: "puma-jemalloc", refork: "SIGURG" }
    record[:runs] << { server: "puma-jemalloc", round: 1, requests_per_sec: 250.0, total_pss: 500 * 1024**2,
                       per_gib: 512.0, reforked: true, command: "env LD_PRELOAD=... puma ..." }
    page, = Bench::RailsPerGb.render(record, "x.json")
    assert_includes page, "| spindle-fibers | puma-jemalloc | 1.88× | no target: the same allocator as Spindle's default |"
  end

  def test_the_page_says_when_yjit_was_asked_for_but_this_ruby_has_none
    record = per_gb_record
    record[:machine][:yjit] = { enabled_for_servers: false, asked: true, available: false }
    assert_includes Bench::RailsPerGb.render(record, "x.json").first,
                    "YJIT off for every server (asked for with --yjit, but this Ruby was built without it)"
  end

  # Bench::YjitCheck: what each server's own binary said.
  def test_the_page_names_the_servers_ruby_and_any_server_without_yjit
    record = per_gb_record
    yjit = "/opt/ruby3.3-yjit/bin/ruby"
    record[:machine][:yjit] = { enabled_for_servers: true, asked: true, available: true,
                                servers: { spindle: { ruby: yjit, enabled: true }, puma: { ruby: yjit, enabled: true } } }
    assert_includes Bench::RailsPerGb.render(record, "x.json").first,
                    "YJIT on for every server (RUBY_YJIT_ENABLE=1; RubyVM::YJIT.enabled? true in every server's Ruby, #{yjit})"
    record[:machine][:yjit] = record[:machine][:yjit].merge(enabled_for_servers: false)
    record[:machine][:yjit][:servers][:puma] = { ruby: "/usr/bin/ruby3.3", enabled: false }
    assert_includes Bench::RailsPerGb.render(record, "x.json").first,
                    "YJIT off for every server (asked for, but RubyVM::YJIT.enabled? was false in puma)"
  end

  def test_the_chart_says_when_yjit_was_on
    record = per_gb_record.merge(settings: { rounds: 1, duration_s: 5, threads_per_process: 5, processes: [1] },
                                 load_generator: { threads: 1 })
    assert_includes Bench::Report::Chart.subtitle(record), "YJIT on"
  end
end
