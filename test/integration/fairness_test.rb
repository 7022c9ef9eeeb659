# frozen_string_literal: true

require "tmpdir"
require_relative "../support/spindle_process"

# No client is starved while another is served again and again (issue 16,
# "Fair tail latency"). With one thread (or one loop) and a client that
# pipelines many requests, a second client that connects while those are
# being served gets its one response before the first client's last; the
# same when the first client sends its next request as soon as it has the
# last response (keep-alive without pipelining): the
# app numbers the requests in the order it sees them. No timing is
# measured: only the order.
#
# The threads engine failed the keep-alive case: its only pool thread kept
# serving the first client (its next request came within the 5 ms the
# thread waited for it), so the pool never had a spare thread, the reactor
# never looked at the listeners, and the second client waited in the
# kernel's backlog until the first was done. The blocking and fibers
# engines failed the pipelining case: they read on while the first
# client's socket had bytes, and served nobody else meanwhile.
class FairnessTest < SpindleIntegrationTest
  HAMMER = 20_000
  ONE_BY_ONE = 3_000
  ENGINES = { "blocking" => [], "threads" => ["-t", "1:1"], "fibers" => [], "hybrid" => ["-t", "2:2"] }.freeze

  def setup
    @dir = Dir.mktmpdir("spindle-fairness")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  ENGINES.each do |engine, extra|
    define_method("test_a_new_client_is_served_while_another_keeps_sending_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "--max-keepalive-requests", (HAMMER * 2).to_s,
                         "-b", LOOPBACK, app_path("files"), env: { "SPINDLE_TEST_FILES" => @dir })
      started = Queue.new
      hammer = Thread.new { hammer(app, started) }
      started.pop # the first client is being served

      single = connect(app).write(request("GET", "/count")).read_response(deadline: 60)
      seen = Integer(single.body)
      last = hammer.value
      assert_operator seen, :<, last,
                      "the single request was number #{seen}: after all #{HAMMER} of the pipelining client's"
    end

    define_method("test_a_new_client_is_served_while_another_keeps_asking_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "--max-keepalive-requests", (ONE_BY_ONE * 2).to_s,
                         "-b", LOOPBACK, app_path("files"), env: { "SPINDLE_TEST_FILES" => @dir })
      started = Queue.new
      hammer = Thread.new { ask_one_by_one(app, started) }
      started.pop

      single = connect(app).write(request("GET", "/count")).read_response(deadline: 60)
      seen = Integer(single.body)
      last = hammer.value
      assert_operator seen, :<, last,
                      "the single request was number #{seen}: after all #{ONE_BY_ONE} of the keep-alive client's"
    end
  end

  private

  # Pipelines HAMMER requests on one connection, reading the responses as
  # they come; started gets word once the first is in. Returns the number
  # of the last.
  def hammer(app, started)
    client = connect(app)
    writer = Thread.new do
      batch = request("GET", "/count") * 100
      (HAMMER / 100).times { client.write(batch, deadline: 60) }
    end
    last = nil
    HAMMER.times do |i|
      last = Integer(client.read_response(deadline: 60).body)
      started << true if i.zero?
    end
    writer.join
    last
  end

  # Sends ONE_BY_ONE requests on one connection, each once the last
  # response is in (keep-alive, no pipelining). Returns the last number.
  def ask_one_by_one(app, started)
    client = connect(app)
    last = nil
    ONE_BY_ONE.times do |i|
      last = Integer(client.write(request("GET", "/count")).read_response(deadline: 60).body)
      started << true if i.zero?
    end
    last
  end
end
