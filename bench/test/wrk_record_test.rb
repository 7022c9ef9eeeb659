# frozen_string_literal: true

require "minitest/autorun"
require_relative "../lib/bench"
require_relative "../lib/bench/memory"

# The one wrk record (WrkTrial.record) that every trial and page reads, and
# the memory scenarios' figures from the same wrk_report.lua result.
class WrkRecordTest < Minitest::Test
  RESULT = { requests: 2000, duration_us: 2_000_000, bytes: 123, connect_errors: 0, read_errors: 2, write_errors: 0,
             status_errors: 1, timeouts: 0, p50_us: 500, p90_us: 900, p99_us: 1500, p999_us: 3000, max_us: 4000,
             mean_us: 600.5, paced_sent: 2001, paced_late: 3, paced_max_late_ms: 1.5 }.freeze

  def run_of(argv) = Bench::Wrk::Run.new(argv: argv, result: RESULT, usage: nil)

  def test_the_record_has_wrk_s_figures_in_ms_and_keeps_what_a_script_added
    argv = Bench::Wrk.argv(url: "http://127.0.0.1:4242/", connections: 50, duration: 2, threads: 1, timeout: 5,
                           script: File.join(Bench::Paths::BENCH, "lib", "bench", "paced.lua"), script_args: [100])
    r = Bench::WrkTrial.record(run_of(argv), connections: 50, processes: 1, wrk_threads: 1)
    assert_equal [1000.0, 1.5, 0.601], [r[:requests_per_sec], r[:latency_ms][:p99], r[:latency_ms][:mean]]
    assert_equal({ connect: 0, read: 2, write: 0, timeout: 0 }, r[:errors])
    assert_equal [1, 2001, 3, 1.5], r.values_at(:bad_status, :paced_sent, :paced_late, :paced_max_late_ms)
    assert_nil r[:bytes]
    refute r[:load_generator_bound], "no CPU samples: never bound"
    assert_equal "wrk -t 1 -c 50 -d 2s --timeout 5s --latency -s bench/lib/bench/paced.lua http://127.0.0.1:PORT/ -- 100", r[:wrk]
  end

  def test_the_memory_scenarios_figures_say_socket_errors_as_wrk_prints_them
    figures = Bench::Memory.wrk_figures(RESULT)
    assert_equal({ requests: 2000, requests_per_sec: 1000.0, socket_errors: "connect 0, read 2, write 0, timeout 0", non_2xx: 1 },
                 figures)
    assert_nil Bench::Memory.wrk_figures(RESULT.merge(read_errors: 0))[:socket_errors]
  end

  def test_headers_go_before_the_script
    argv = Bench::Wrk.argv(url: "http://127.0.0.1:1/", connections: 16, duration: 1, threads: 1, timeout: 10,
                           headers: ["Connection: close"])
    assert_equal ["-H", "Connection: close", "--latency"], argv[argv.index("-H"), 3]
  end
  # A warm_pools scenario warms up at more connections with several processes
  # (each process's database pool opens lazily); any other, at the run's own.
  def test_the_warm_up_fills_every_process_s_pool_where_the_scenario_asks
    counts = [true, false].product([1, 2]).to_h do |pools, processes|
      scenario = Bench::Scenario.new(name: "t", app: "hello.ru", warm_pools: pools)
      server = Struct.new(:launch).new(Bench::Launch.new(processes: processes))
      [[pools, processes], Bench::WrkTrial.new(server: server, settings: nil, scenario: scenario).warm_up_connections(16)]
    end
    assert_equal({ [true, 1] => 16, [true, 2] => 48, [false, 1] => 16, [false, 2] => 16 }, counts)
  end
end
