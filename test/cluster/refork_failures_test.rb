# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"

# A refork whose mold dies. The master logged it as an expected exit ("mold
# removed", at info), so a refork that never happened looked like one that
# did. Now the death is an error that says what it cost, stats and metrics
# count the failed refork, and the cluster serves on and can refork again.
class ReforkFailuresTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")

  def setup
    dir = Dir.mktmpdir("spindle-refork")
    @flag = File.join(dir, "fail")
    @config = File.join(dir, "spindle.rb")
    File.write(@config, "before_refork { raise 'before_refork failed on purpose' if File.exist?(#{@flag.inspect}) }\n")
  end

  def start(*args)
    app = start_cluster("-C", @config, *args, APP, workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    app
  end

  def test_a_refork_whose_mold_to_be_dies_fails_and_says_so_and_the_next_one_works
    app = start
    File.write(@flag, "")
    assert_equal({ "ok" => "refork" }, control("refork"))
    assert app.wait_for_output(/worker \d+ \(becoming the mold of generation 1\) \(pid \d+\) died: exit status 1; refork to generation 1 failed; the other workers keep serving/,
                               deadline: DEADLINE), app.output
    refute_match(/mold \(generation \d+\) removed/, app.output)
    wait_until("2 workers serving again") { serving_workers.size == 2 }
    master = stats["master"]
    assert_equal [0, 1], master.values_at("generation", "refork_failures")
    assert_nil stats["mold"]
    assert_equal 200, ClusterHelpers.get(app, "/").status

    File.delete(@flag)
    control("refork")
    wait_until("generation 1 serves from its mold") do
      report = stats
      report["mold"]&.fetch("state") == "mold" && report["workers"].size == 2 &&
        report["workers"].all? { |w| w["state"] == "serving" && w["generation"] == 1 }
    end
  end

  # --refork-after would pick the next busiest worker at once, run the same
  # hook, and lose that worker too, over and over.
  def test_refork_after_waits_after_a_failed_refork
    File.write(@flag, "")
    app = start("--refork-after", "5")
    failed = /refork to generation 1 failed; the other workers keep serving, and automatic reforks wait until one succeeds/
    wait_until("the automatic refork fails") do
      ClusterHelpers.get(app, "/")
      app.output.match?(failed)
    end
    wait_until("2 workers serving again") { serving_workers.size == 2 }
    30.times { assert_equal 200, ClusterHelpers.get(app, "/").status }
    wait_until("a worker past --refork-after has checked in") { serving_workers.any? { |w| w["requests"] >= 5 } }
    # The master answers stats, then asks whether a refork is due in the same
    # turn: by this second answer it has asked at least once since.
    # A worker told to become the mold leaves "workers" for "mold".
    report = stats
    assert_nil report["mold"], "a second refork started: #{report['mold'].inspect}"
    assert_equal %w[serving serving], report["workers"].map { |w| w["state"] }
    assert_equal 1, report["master"]["refork_failures"], app.output
  end

  def test_a_mold_that_dies_is_an_error_and_new_workers_start_from_the_master
    app = start
    control("refork")
    mold = wait_until("generation 1 serves from its mold") do
      report = stats
      report["mold"] if report["mold"]&.fetch("state") == "mold" &&
                        report["workers"].count { |w| w["state"] == "serving" && w["generation"] == 1 } == 2
    end
    Process.kill(:KILL, mold["pid"])
    assert app.wait_for_output(/mold \(generation 1\) \(pid #{mold['pid']}\) died: killed by signal KILL; until the next refork, new workers start from the master/,
                               deadline: DEADLINE), app.output
    assert_equal 0, stats["master"]["refork_failures"], "the refork itself had succeeded"

    control("add-worker")
    added = wait_until("a third worker serving") { serving_workers.find { |w| w["generation"].zero? } }
    assert_equal 3, serving_workers.size, "a worker forked by the master (generation 0): #{added}"
  end
end
