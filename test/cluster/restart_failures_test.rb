# frozen_string_literal: true

require "tmpdir"
require_relative "../support/cluster_helpers"

# Restarts that deploy code which cannot boot (issue 11, items 6 and 7), and
# hot restarts asked for twice. The old workers and the old master must keep
# serving, the failure must end and say why, and the next restart must work.
class RestartFailuresTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = app_path("breakable")

  def setup
    @flag = File.join(Dir.mktmpdir("spindle-deploy"), "broken")
  end

  def deploy(mode) = File.write(@flag, mode)

  def fix = File.delete(@flag)

  def start(*args, workers: 2)
    app = start_cluster("--no-preload", *args, APP, workers: workers, env: { "SPINDLE_TEST_BROKEN" => @flag })
    wait_until("#{workers} workers serving") { serving_workers.size == workers }
    app
  end

  def serving_pids = serving_workers.map { |w| w["pid"] }.sort

  # Item 7: after one failed boot the rollout used to wait for ever, and every
  # later USR1 was refused as "in progress".
  def test_a_phased_restart_that_cannot_boot_ends_and_the_next_one_works
    app = start
    before = serving_pids
    deploy("raise")
    Process.kill(:USR1, app.pid)
    assert app.wait_for_output(/phased restart failed: worker \d+ failed to boot; the old workers keep serving/,
                               deadline: DEADLINE), app.output
    assert_equal before, serving_pids
    assert_equal 200, ClusterHelpers.get(app, "/").status
    fix
    Process.kill(:USR1, app.pid)
    wait_until("every worker replaced") { serving_pids.size == 2 && (serving_pids & before).empty? }
  end

  # A boot that hangs is bounded by --worker-timeout, so it ends the rollout too.
  def test_a_phased_restart_whose_boot_hangs_ends
    app = start("--worker-timeout", "5")
    before = serving_pids
    deploy("hang")
    Process.kill(:USR1, app.pid)
    assert app.wait_for_output(/phased restart failed: worker \d+ failed to boot/, deadline: DEADLINE), app.output
    assert_match(/did not boot within 5.0s/, app.output)
    assert_equal before, serving_pids
  end

  # Item 6: two USR2s in a row started two new masters, both serving the port.
  def test_a_second_hot_restart_waits_for_the_first
    app = start
    Process.kill(:USR2, app.pid)
    wait_until("a new master started") { masters(app).size == 2 }
    Process.kill(:USR2, app.pid) # a second signal, not merged with the first
    wait_until("the old master exits") { !app.alive? }
    wait_until("the new master serving") { stats["master"]["pid"] != app.pid && serving_workers.size == 2 }
    assert_equal 1, masters(app).size, "masters serving the port: #{masters(app)}"
    assert_match(/hot restart ignored: (new master pid \d+ is starting|this master is stopping)/, app.output)
  end

  # Item 6: with --no-preload a new master whose workers could not boot stayed
  # up with none, and the old master believed it had handed over.
  def test_a_hot_restart_that_cannot_boot_gives_up_and_the_next_one_works
    app = start
    old_workers = serving_pids
    deploy("raise")
    Process.kill(:USR2, app.pid)
    assert app.wait_for_output(/hot restart failed: new master pid \d+ exited/, deadline: DEADLINE), app.output
    assert_match(/this new master gives up and exits/, app.output)
    refute_match(/takes over the listeners/, app.output)
    assert_equal [app.pid], masters(app)
    assert_equal app.pid, stats["master"]["pid"], "spindlectl still reaches the old master"
    assert_equal old_workers, serving_pids
    assert_equal 200, ClusterHelpers.get(app, "/").status

    fix
    Process.kill(:USR2, app.pid)
    wait_until("the old master exits") { !app.alive? }
    wait_until("the new master serving") { stats["master"]["pid"] != app.pid && serving_workers.size == 2 }
    assert_equal 1, masters(app).size, "masters serving the port: #{masters(app)}"
    assert_match(/new master pid \d+ takes over the listeners/, app.output)
  end
end
