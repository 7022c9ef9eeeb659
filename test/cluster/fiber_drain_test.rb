# frozen_string_literal: true

require_relative "../support/cluster_helpers"
require_relative "../support/drain_helpers"

# Workers drain during a phased restart; on the fiber engines that used to
# stop every request in flight (Async::Stop inside the app, a 500 each). A few
# clients make slow requests on keep-alive connections throughout a USR1:
# not one may fail.
class FiberDrainTest < SpindleIntegrationTest
  include ClusterHelpers
  include DrainHelpers

  APP = app_path("slow")
  CLIENTS = 6

  # Sequential slow requests on one keep-alive connection per client,
  # reconnecting when a response says connection: close. Bounded in count
  # and time; anything but a 200 is a failure.
  class SlowClients
    MAX_REQUESTS = 2_000
    MAX_SECONDS = 90

    attr_reader :failures

    def initialize(process, clients)
      @process = process
      @ok = 0
      @failures = []
      @lock = Mutex.new
      @stop = false
      @started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @threads = Array.new(clients) { Thread.new { run } }
    end

    def ok = @lock.synchronize { @ok }

    def stop
      @stop = true
      @threads.each(&:join)
      self
    end

    private

    def run
      connection = nil
      until @stop || over_budget?
        connection ||= @process.connect
        connection = one_request(connection)
      end
    ensure
      connection&.close
    end

    # Returns the connection to reuse, or nil for a new one.
    def one_request(connection)
      connection.write(HttpClient.request("GET", "/slow"))
      response = connection.read_response
      @lock.synchronize { response.status == 200 ? @ok += 1 : @failures << "status #{response.status}" }
      response.close? ? connection.close : connection
    rescue StandardError => e
      @lock.synchronize { @failures << "#{e.class}: #{e.message}" }
      connection.close
      nil
    end

    def over_budget?
      @ok + @failures.size >= MAX_REQUESTS ||
        Process.clock_gettime(Process::CLOCK_MONOTONIC) - @started > MAX_SECONDS
    end
  end

  %w[fibers hybrid].each do |engine|
    define_method("test_phased_restart_under_slow_load_fails_nothing_on_#{engine}") do
      app = start_cluster("--engine", engine, APP, workers: 2)
      wait_until("2 workers serving") { serving_workers.size == 2 }
      before = serving_workers.map { |w| w["pid"] }
      load = SlowClients.new(app, CLIENTS)
      wait_until("requests in flight") { load.ok >= CLIENTS }

      Process.kill(:USR1, app.pid)
      wait_until("every worker replaced and gone") do
        (stats["workers"].map { |w| w["pid"] } & before).empty? && serving_workers.size == 2
      end
      served = load.ok
      wait_until("requests served by the new workers") { load.ok >= served + CLIENTS }
      load.stop

      # The failures first: a CI log keeps a failure's first lines.
      assert_empty load.failures, "requests failed during a phased restart on #{engine}: " \
                                  "#{load.failures.tally}\n#{app.output}"
      refute_app_errors(app)
    end
  end

  # QUIT to the master: every worker drains with no time limit; the request
  # held in the app gets its response.
  def test_quit_to_the_master_lets_the_request_in_flight_finish_on_fibers
    app = start_cluster("--engine", "fibers", app_path("cluster"), workers: 2)
    wait_until("2 workers serving") { serving_workers.size == 2 }
    gate = rendezvous
    in_flight = connect(app)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    visit = gate.await("entered")

    Process.kill(:QUIT, app.pid)
    wait_until("both workers draining") { app.output.scan("draining (no time limit)").size == 2 }
    visit.release
    assert_equal 200, in_flight.read_response.status, app.output
    assert_equal 0, app.wait_for_exit(SpindleProcess::STOP_DEADLINE)&.exitstatus, app.output
    refute_app_errors(app)
  end
end
