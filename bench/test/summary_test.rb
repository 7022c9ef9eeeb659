# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench/summary"

class SummaryTest < Minitest::Test
  def measurement(server, rps, bound: false, connections: 16)
    { server: server, processes: 1, connections: connections, requests_per_sec: rps,
      latency_ms: { p50: 1.0, p99: 2.0, p999: 3.0 }, errors: { connect: 0, read: 0, write: 0, timeout: 0 },
      bad_status: 0, load_generator_bound: bound, cpu: { other_cores: 0.0 } }
  end

  def summary(measurements)
    servers = [%w[spindle-threads spindle], %w[spindle-fibers spindle], %w[puma peer], %w[nginx ceiling]]
    Bench::Summary.new(servers: servers.map { |n, f| { name: n, family: f } },
                       settings: { processes: [1], connections: [16] }, measurements: measurements)
  end

  def test_figure_is_the_median_with_min_and_max
    s = summary([measurement("puma", 10), measurement("puma", 30), measurement("puma", 20)])
    figure = s.figures(1, 16).first
    assert_equal [20, 10, 30], [figure.median, figure.min, figure.max]
  end

  def test_ratios_use_the_best_spindle_engine
    s = summary([measurement("spindle-threads", 100), measurement("spindle-fibers", 200), measurement("puma", 50)])
    best = s.spindle_best(1, 16)
    assert_equal "spindle-fibers", best.server
    puma = s.figures(1, 16).find { |f| f.server == "puma" }
    assert_in_delta 0.25, s.ratio(puma, best).value
  end

  def test_a_bound_reference_makes_the_ratio_an_upper_bound
    s = summary([measurement("spindle-threads", 100), measurement("nginx", 400, bound: true)])
    ratio = s.ratio(s.spindle_best(1, 16), s.ceiling(1, 16))
    assert_equal "<=", ratio.qualifier
  end

  def test_bound_when_at_least_half_the_rounds_were
    s = summary([measurement("nginx", 1, bound: true), measurement("nginx", 1)])
    assert s.ceiling(1, 16).bound?
  end
end
