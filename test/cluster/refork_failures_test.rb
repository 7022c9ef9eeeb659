# frozen_string_literal: true

require "open3"
require "tmpdir"
require_relative "../support/cluster_helpers"

# Reforks that fail. A refork whose mold died was logged as an expected exit
# ("mold removed", at info), so a refork that never happened looked like one
# that did. Then (issue 65, item 1) a refork hook that hung held the cluster:
# the mold-to-be had no deadline, and no empty slot was refilled while it
# hung, so a worker killed meanwhile left no worker for a minute; an
# after_refork hook that raised left -w 1 with no worker while the log said
# the refork was done. Now each refork hook may hang or raise, with a worker
# killed meanwhile: the slot is refilled at once from the generation that
# boots, the refork ends at --worker-timeout with an error in the log and in
# stats, and the cluster serves on and can refork again.
class ReforkFailuresTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("cluster")
  CTL = File.join(SpindleProcess::ROOT, "bin", "spindlectl")
  HOOKS = %w[before_refork after_refork].freeze

  # Each refork hook does what the file named after it says: "raise",
  # "hang", "gate" (wait until the test releases it, then raise) or "wait"
  # (wait until released, then return). It notes that it was entered, with
  # its pid.
  def setup
    @dir = Dir.mktmpdir("spindle-refork")
    @config = File.join(@dir, "spindle.rb")
    File.write(@config, <<~RUBY)
      hook = lambda do |name|
        mode = File.join(#{@dir.inspect}, name)
        next unless File.exist?(mode)

        File.write("\#{mode}.entered", Process.pid.to_s)
        case File.read(mode)
        when "raise" then raise "\#{name} failed on purpose"
        when "hang" then sleep
        when "gate"
          sleep 0.05 until File.exist?("\#{mode}.release")
          raise "\#{name} failed on purpose"
        when "wait" then sleep 0.05 until File.exist?("\#{mode}.release")
        end
      end
      before_refork { hook.call("before_refork") }
      after_refork { |_index| hook.call("after_refork") }
    RUBY
  end

  def hook(name, mode) = File.write(File.join(@dir, name), mode)

  def heal(name) = File.delete(File.join(@dir, name))

  def release(name) = File.write(File.join(@dir, "#{name}.release"), "")

  # The pid of the process that entered the hook, once one has.
  def entered(name)
    path = File.join(@dir, "#{name}.entered")
    wait_until("#{name} entered") { File.exist?(path) && !File.read(path).empty? }
    File.read(path).to_i
  end

  def start(*args, workers: 2)
    app = start_cluster("-C", @config, *args, APP, workers: workers)
    wait_until("#{workers} workers serving") { serving_workers.size == workers }
    app
  end

  def refork_state = stats["master"]["refork"]

  # Requests on fresh connections while the refork runs: one worker serves
  # all along (capacity N-1), so none fails.
  def assert_served_throughout(app)
    load = ClusterHelpers::Load.new(app, threads: 2)
    wait_until("50 requests served") { load.ok >= 50 }
    assert_empty load.stop.failures
  end

  def kill_the_other_worker(app)
    victim = serving_workers.find { |w| w["generation"].zero? }
    Process.kill(:KILL, victim["pid"])
    victim
  end

  # The failed refork's mold is told to go as the refork fails, and the
  # slot's new worker may serve before the mold has exited ("mold_retiring"
  # in the stats): the wait covers both.
  def assert_serving_again(workers = 2)
    wait_until("#{workers} generation-0 workers serving, and the failed refork's mold gone") do
      report = stats
      report["mold"].nil? && report["workers"].size == workers &&
        report["workers"].all? { |w| w["state"] == "serving" && w["generation"].zero? }
    end
    report = stats
    assert_equal [0, "idle"], [report["master"]["generation"], report["master"]["refork"]["state"]]
  end

  def test_a_refork_whose_mold_to_be_dies_fails_and_says_so_and_the_next_one_works
    app = start
    hook("before_refork", "raise")
    assert_equal({ "ok" => "refork" }, control("refork"))
    assert app.wait_for_output(/worker \d+ \(becoming the mold of generation 1\) \(pid \d+\) died: exit status 1; refork to generation 1 failed; the other workers keep serving/,
                               deadline: DEADLINE), app.output
    refute_match(/mold \(generation \d+\) removed/, app.output)
    wait_until("2 workers serving again") { serving_workers.size == 2 }
    master = stats["master"]
    assert_equal [0, 1], master.values_at("generation", "refork_failures")
    assert_nil stats["mold"]
    assert_equal 200, ClusterHelpers.get(app, "/").status

    heal("before_refork")
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
    hook("before_refork", "raise")
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

  # --- a refork hook hanging or raising, a worker killed meanwhile -----------

  # The outage of issue 65, item 1: no slot was refilled while a worker
  # became the mold, so the killed worker's slot stayed empty for as long as
  # before_refork ran.
  def test_a_worker_killed_while_before_refork_runs_is_replaced_at_once_and_the_hook_raising_fails_the_refork
    app = start
    hook("before_refork", "gate")
    assert_equal({ "ok" => "refork" }, control("refork"))
    mold_to_be = entered("before_refork")
    assert_served_throughout(app)

    victim = kill_the_other_worker(app)
    wait_until("the killed worker's slot serves again while before_refork still runs") do
      serving_workers.any? { |w| w["pid"] != victim["pid"] && w["generation"].zero? }
    end
    assert_equal %w[becoming_mold 1], refork_state.values_at("state", "generation").map(&:to_s)
    assert_served_throughout(app)

    release("before_refork")
    assert app.wait_for_output(/worker \d+ \(becoming the mold of generation 1\) \(pid #{mold_to_be}\) died: exit status 1; refork to generation 1 failed/,
                               deadline: DEADLINE), app.output
    assert_serving_again
    assert_match(/died while it became the mold \(exit status 1\)/, refork_state["last_failure"]["reason"])
  end

  # The mold-to-be has --worker-timeout: its last check-in says it drained,
  # and silence that long after is its hook. It logs its threads before the KILL.
  def test_a_before_refork_hook_that_hangs_fails_the_refork_at_the_worker_timeout
    app = start("--worker-timeout", "3")
    hook("before_refork", "hang")
    control("refork")
    mold_to_be = entered("before_refork")
    kill_the_other_worker(app)
    assert app.wait_for_output(/refork to generation 1 failed: worker \d+ \(pid #{mold_to_be}\) did not become the mold within 3.0s \(--worker-timeout\) of draining: its before_refork hook or heap warm-up did not finish; logging its threads, then killing it/,
                               deadline: DEADLINE), app.output
    assert_serving_again
    dump = ClusterHelpers.log_of(app, mold_to_be)
    assert_match(/thread dump: \d+ thread\(s\), 0 request\(s\) in flight/, dump)
    assert_match(/spindle\.rb:\d+:in .*sleep/, dump, "the dump shows where the hook hangs")
    assert_match(/did not become the mold within 3.0s/, refork_state["last_failure"]["reason"])
    out, status = Open3.capture2e(CTL, "--control", "unix://#{@control}", "stats")
    assert status.success?, out
    assert_match(/^last refork failure \(generation 1, [^)]+\): worker \d+ did not become the mold within 3.0s/, out)
  end

  # The first worker forked from the new mold runs after_refork. Until it
  # serves, the mold is on trial: a slot emptied meanwhile is refilled from
  # the master (generation 0), not from the mold whose workers hang. (It
  # was refilled from the new mold, and ran the same hook.)
  def test_a_worker_killed_while_after_refork_runs_is_replaced_from_the_master_and_the_hook_raising_fails_the_refork
    app = start
    hook("after_refork", "gate")
    control("refork")
    first = entered("after_refork")
    assert_served_throughout(app)

    victim = kill_the_other_worker(app)
    wait_until("the killed worker's slot serves again, from the master") do
      serving_workers.any? { |w| w["pid"] != victim["pid"] && w["generation"].zero? }
    end
    assert_equal "first_worker_booting", refork_state["state"]
    assert_equal "mold_trial", stats["mold"]["state"]

    release("after_refork")
    assert app.wait_for_output(/refork to generation 1 failed: worker \d+, the first forked from the new mold, exited before it served \(see its after_refork hook\); the slot is refilled from the master/,
                               deadline: DEADLINE), app.output
    assert_serving_again
    assert_match(/after_refork failed on purpose/, app.output)
    refute_match(/refork to generation 1 done/, app.output)
    refute_includes serving_workers.map { |w| w["pid"] }, first
  end

  def test_an_after_refork_hook_that_hangs_fails_the_refork_at_the_worker_timeout
    app = start("--worker-timeout", "3")
    hook("after_refork", "hang")
    control("refork")
    first = entered("after_refork")
    kill_the_other_worker(app)
    assert app.wait_for_output(/refork to generation 1 failed: worker \d+, the first forked from the new mold, did not boot within 3.0s/,
                               deadline: DEADLINE), app.output
    assert_serving_again
    dump = ClusterHelpers.log_of(app, first)
    assert_match(/spindle\.rb:\d+:in .*sleep/, dump, "the dump shows where the hook hangs")
    refute_match(/refork to generation 1 done/, app.output)
  end

  # -w 1 logged "refork to generation 1 done" while no worker served, and
  # forked the slot again and again from the mold whose workers failed.
  def test_with_one_worker_a_failing_after_refork_is_a_failed_refork_and_the_master_refills_the_slot
    app = start(workers: 1)
    hook("after_refork", "raise")
    control("refork")
    assert app.wait_for_output(/refork to generation 1 failed: worker 0, the first forked from the new mold, exited before it served/,
                               deadline: DEADLINE), app.output
    assert_serving_again(1)
    assert_equal 200, ClusterHelpers.get(app, "/").status
    refute_match(/refork to generation 1 done/, app.output)
    assert_equal 1, stats["master"]["refork_failures"]

    heal("after_refork")
    control("refork")
    assert app.wait_for_output(/refork to generation 1 done/, deadline: DEADLINE), app.output
    assert_equal [1], serving_workers.map { |w| w["generation"] }
  end

  # A stop while the mold-to-be runs before_refork: its stop order waits in
  # its channel, and the mold it becomes forks nothing and goes. The master
  # used to fork the new generation's first worker from the mold that had
  # become ready during its stop.
  def test_a_stop_while_before_refork_runs_forks_nothing_and_the_master_exits
    app = start(workers: 1)
    hook("before_refork", "wait")
    control("refork")
    entered("before_refork")
    app.signal(:TERM)
    assert app.wait_for_output(/stopping \(graceful\)/), app.output
    release("before_refork")
    assert_equal 0, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, app.output
    refute_match(/added \(pid \d+, generation 1\)/, app.output)
  end

  def test_a_refork_asked_for_while_one_is_under_way_is_refused_with_the_reason
    start
    hook("before_refork", "gate")
    control("refork")
    entered("before_refork")
    assert_equal({ "error" => "refork ignored: the refork to generation 1 is under way" }, control("refork"))
    release("before_refork")
  end

  # Issue 65, item 14: the mold kept its last check-in as a worker: requests
  # in flight long finished, and an age that grew past --worker-timeout.
  def test_the_mold_reports_nothing_in_flight_and_no_check_in_age
    app = start
    control("refork")
    wait_until("generation 1 serves from its mold") do
      report = stats
      report["mold"]&.fetch("state") == "mold" && report["workers"].all? { |w| w["generation"] == 1 }
    end
    mold = stats["mold"]
    assert_equal [0, 0, nil, 0.0], mold.values_at("in_flight", "backlog", "last_checkin_age", "oldest_request_age")
    out, = Open3.capture2e(CTL, "--control", "unix://#{@control}", "stats")
    assert_match(/^mold\s+#{mold['pid']}\s+mold\s+1\s.*\s-\s/, out)
    assert_equal 200, ClusterHelpers.get(app, "/").status
  end
end
