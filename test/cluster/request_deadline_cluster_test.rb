# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/cluster_helpers"

# --request-timeout in a cluster (docs/DEADLINES.md): a worker whose request
# runs past twice its deadline (the threads engine raises nothing into it)
# logs its threads and is replaced gracefully: a new worker serves, the old
# one's other requests finish, and the late request gets its 503 when it
# returns.
class RequestDeadlineClusterTest < SpindleIntegrationTest
  include ClusterHelpers

  APP = File.join(SpindleIntegrationTest::APPS, "deadline.ru")

  def test_a_request_past_twice_its_deadline_gets_its_worker_replaced_gracefully
    app = start_cluster("--engine", "threads", "-t", "2:2", "--request-timeout", "0.5", APP, workers: 1)
    wait_until("1 worker serving") { serving_workers.size == 1 }
    old = serving_workers.first["pid"]
    dir = Dir.mktmpdir("spindle-deadline-cluster")
    other = send_get(app, "/wait?release=#{dir}/other")
    late = send_get(app, "/hold?release=#{dir}/late")

    assert app.wait_for_output(/worker 0 \(pid #{old}\) has a request running past twice its deadline/), app.output
    wait_until("a replacement serving") { serving_workers.map { |w| w["pid"] } - [old] != [] }
    assert_equal 200, ClusterHelpers.get(app, "/ok").status
    dump = wait_until("the late worker's thread dump") do
      log = ClusterHelpers.log_of(app, old)
      log if log.include?("thread dump:") && log.match?(/deadline\.ru:\d+/)
    end
    assert_match(%r{thread dump: \d+ thread\(s\), 2 request\(s\) in flight: .*GET /hold}, dump)

    File.write("#{dir}/other", "")
    response = other.read_response
    assert_equal [200, "#{old}\n"], [response.status, response.body], "the draining worker's other request finishes"
    File.write("#{dir}/late", "")
    assert_equal 503, late.read_response.status
    removed = app.wait_for_output(/worker 0 removed \(pid #{old}, [^)]*\)/)
    assert removed, app.output
    refute_match(/signal/, removed[0], "replaced, not killed")
  end

  private

  def send_get(app, target)
    connection = connect(app)
    connection.write(HttpClient.request("GET", target, [["Connection", "close"]]))
    connection
  end
end
