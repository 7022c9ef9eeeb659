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
# Neither test may depend on how soon the test process gets round to
# connecting the second client (with a fixed run of 20,000 pipelined
# requests, a busy machine once let a fair server finish them all before
# the second client had even connected: Ruby 3.3, in CI). The pipelining
# client sends its second half only once the single request is sent; the
# keep-alive client asks until the single request is answered, and once
# more after that.
#
# The threads engine failed the keep-alive case: its only pool thread kept
# serving the first client (its next request came within the 5 ms the
# thread waited for it), so the pool never had a spare thread, the reactor
# never looked at the listeners, and the second client waited in the
# kernel's backlog until the first was done. Later, with several clients
# that kept a request waiting for the thread at all times, it still accepted
# only when that queue was empty, which it never was: the crowd test. The
# blocking and fibers
# engines failed the pipelining case: they read on while the first
# client's socket had bytes, and served nobody else meanwhile.
class FairnessTest < SpindleIntegrationTest
  HAMMER = 20_000
  ONE_BY_ONE = 10_000 # a cap: a fair server answers the single request long before
  BATCH = 100
  CROWD = 4
  IN_FLIGHT = 16
  CROWD_CAP = 1_000 # each; the crowd's requests take 1 ms of app time each
  ENGINES = { "blocking" => [], "threads" => ["-t", "1:1"], "fibers" => [], "hybrid" => ["--loops", "2"] }.freeze

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
      seen, last = race(app) { |started, sent, _served| hammer(app, started, sent) }
      assert_operator seen, :<, last, "the single request was number #{seen}: after all of the pipelining client's"
    end

    define_method("test_a_new_client_is_served_while_another_keeps_asking_with_#{engine}") do
      app = spawn_server("--engine", engine, *extra, "--max-keepalive-requests", (ONE_BY_ONE * 2).to_s,
                         "-b", LOOPBACK, app_path("files"), env: { "SPINDLE_TEST_FILES" => @dir })
      seen, last = race(app) { |started, _sent, served| ask_one_by_one(app, started, served) }
      assert_operator seen, :<, last, "the single request was number #{seen}: after all of the keep-alive client's"
    end
  end

  # Several keep-alive clients, each with requests always in flight (and
  # each request 1 ms of app work, so the server is the slower side), keep a complete request waiting for the one pool thread all the
  # time. A process serving alone used to accept only in the moments that
  # queue was empty, and a new client waited in the backlog (on wrk's hello
  # load, for up to seconds).
  def test_a_new_client_is_accepted_while_several_keep_the_threads_engine_busy
    app = spawn_server("--engine", "threads", "-t", "1:1", "--max-keepalive-requests", (ONE_BY_ONE * 2).to_s,
                       "-b", LOOPBACK, app_path("files"), env: { "SPINDLE_TEST_FILES" => @dir })
    seen, lasts = race(app) do |started, _sent, served|
      relay = Queue.new
      askers = Array.new(CROWD) { Thread.new { keep_in_flight(app, relay, served) } }
      CROWD.times { relay.pop }
      started << true
      askers.map(&:value)
    end
    assert_operator seen, :<, lasts.min, "the single request was number #{seen}: after a keep-alive client had ended (#{lasts.join(", ")})"
  end

  private

  # Runs the first client (the block) in a thread; once it has its first
  # response, sends the single request (then sent gets word) and reads its
  # response (then served does). Returns the single request's number and
  # the first client's last.
  def race(app)
    started = Queue.new
    sent = Queue.new
    served = Queue.new
    first = Thread.new { yield started, sent, served }
    started.pop
    single = connect(app).write(request("GET", "/count"))
    sent << true
    seen = Integer(single.read_response(deadline: 60).body)
    served << true
    [seen, first.value]
  end

  # Pipelines HAMMER requests on one connection, BATCH at a time, reading
  # the responses as they come; started gets word once the first is in. The
  # second half goes out once sent has word: a fair server then has the
  # single request while at least that half is still to come. Returns the
  # number of the last.
  def hammer(app, started, sent)
    client = connect(app)
    written = Queue.new # the size of each batch written; nil after the last
    writer = Thread.new do
      batch = request("GET", "/count") * BATCH
      batches = HAMMER / BATCH
      batches.times do |i|
        sent.pop if i == batches / 2
        client.write(batch, deadline: 60)
        written << BATCH
      end
    ensure
      written << nil
    end
    last = nil
    while (count = written.pop)
      count.times do
        first = last.nil?
        last = Integer(client.read_response(deadline: 60).body)
        started << true if first
      end
    end
    writer.join
    last
  end

  # Sends requests on one connection, each once the last response is in
  # (keep-alive, no pipelining). Stops at ONE_BY_ONE, or one request after
  # served has word: a server that answered the single request while this
  # client was still asking gives this client a last number above the
  # single's. Returns that number.
  def ask_one_by_one(app, started, served)
    client = connect(app)
    last = nil
    ONE_BY_ONE.times do |i|
      final = !served.empty? # this request is sent after the single's response
      last = Integer(client.write(request("GET", "/count")).read_response(deadline: 60).body)
      started << true if i.zero?
      break if final
    end
    last
  end

  # As ask_one_by_one (with CROWD_CAP, and requests that take 1 ms), with
  # IN_FLIGHT requests sent before the answer to the first is read, and one
  # more after each answer. Once served has word it sends one more and reads
  # all, so its last number is of a request sent after the single's answer.
  def keep_in_flight(app, started, served)
    slow = request("GET", "/count?pause=1")
    client = connect(app).write(slow * (IN_FLIGHT - 1))
    last = nil
    CROWD_CAP.times do |i|
      final = !served.empty?
      last = Integer(client.write(slow).read_response(deadline: 60).body)
      started << true if i.zero?
      next unless final

      (IN_FLIGHT - 1).times { last = Integer(client.read_response(deadline: 60).body) }
      return last
    end
    last
  end
end
