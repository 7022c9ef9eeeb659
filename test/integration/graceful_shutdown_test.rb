# frozen_string_literal: true

require "json"
require_relative "../support/spindle_process"
require_relative "../support/drain_helpers"

# TERM and INT: stop accepting, let in-flight requests finish, close idle
# keep-alive connections, exit 0. A second signal exits at once.
#
# An idle keep-alive connection doubles as the witness that the server has
# acted on the first signal: once the server closes it, the signal has been
# handled, so releasing the in-flight request afterwards really tests that the
# request survives shutdown. That needs an engine that can hold an idle
# connection while another request runs, so these tests use `threads`.
class GracefulShutdownTest < SpindleIntegrationTest
  include DrainHelpers

  ENGINES = %w[blocking threads fibers hybrid].freeze

  def start_server
    spawn_server("-b", LOOPBACK, "--engine", "threads", "-t", "2:4", app_path("all"))
  end

  def test_term_with_no_requests_exits_0
    process = start_server
    assert_equal 200, roundtrip(request("GET", "/warm", [["Connection", "close"]]), process).status
    status = process.stop(:TERM)
    assert status, "the server did not exit after TERM:\n#{process.output}"
    assert_equal 0, status.exitstatus, "exit status after TERM:\n#{process.output}"
  end

  def test_int_with_no_requests_exits_0
    process = start_server
    status = process.stop(:INT)
    assert status, "the server did not exit after INT:\n#{process.output}"
    assert_equal 0, status.exitstatus, "exit status after INT:\n#{process.output}"
  end

  def test_term_lets_the_request_in_flight_finish_then_exits_0
    process = start_server
    in_flight, visit = term_with_a_request_in_flight(process)
    visit.release

    response = in_flight.read_response
    assert_equal 200, response.status, "the in-flight request must complete:\n#{response}"
    assert_equal "released\n", response.body
    assert response.close?, "a response sent while shutting down should say connection: close:\n#{response}"
    assert_closed_by_server(in_flight)

    status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
    assert status, "the server did not exit after finishing the in-flight request:\n#{process.output}"
    assert_equal 0, status.exitstatus, process.output
  end

  def test_new_connections_are_not_served_after_term
    process = start_server
    in_flight, visit = term_with_a_request_in_flight(process)
    late = begin
      connect(process)
    rescue SystemCallError
      nil # refused: the listener is closed, which is one way to stop accepting
    end
    late&.write(request("GET", "/too-late-5b7e"))
    visit.release
    assert_equal 200, in_flight.read_response.status
    assert process.wait_for_exit(SpindleProcess::STOP_DEADLINE), "the server did not exit:\n#{process.output}"
    refute_equal 200, (late.read_response.status rescue nil), "a connection made after TERM was served" if late
  end

  def test_second_signal_exits_at_once
    process = start_server
    gate = rendezvous
    in_flight = connect(process)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    gate.await("entered") # held, never released: only the second signal can end this
    idle = idle_keep_alive_connection(process)

    process.signal(:TERM)
    assert_closed_by_server(idle, "TERM should close idle keep-alive connections")
    process.signal(:INT)
    status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
    assert status, "a second signal should stop the server at once, even with a request in flight:\n#{process.output}"
  end

  # Every engine, both drains: the request in flight when the signal comes
  # gets its whole response, and an idle keep-alive connection is closed, not
  # reset. The fiber engines used to stop the request's fiber with the
  # acceptors: a 500 from "app raised: Async::Stop" at the moment of the signal.
  ENGINES.product(%w[TERM QUIT]).each do |engine, signal|
    define_method("test_#{signal.downcase}_lets_the_request_in_flight_finish_on_#{engine}") do
      process = spawn_server("-b", LOOPBACK, "--engine", engine, "-t", "2:4", app_path("all"))
      idle = idle_keep_alive_connection(process) # first: the blocking engine serves one request at a time
      in_flight, visit = request_in_the_app(process)
      process.signal(signal)
      assert process.wait_for_output(/draining/), "no drain after #{signal}:\n#{process.output}"
      assert_closed_cleanly(idle) unless engine == "blocking" # its one thread is inside the app
      visit.release

      response = in_flight.read_response
      assert_equal [200, "released\n"], [response.status, response.body], "#{engine}, #{signal}:\n#{process.output}"
      assert response.close?, "a response sent while draining should say connection: close:\n#{response}"
      assert_closed_cleanly(idle) if engine == "blocking"
      status = process.wait_for_exit(SpindleProcess::STOP_DEADLINE)
      assert_equal 0, status&.exitstatus, "#{engine} after #{signal}:\n#{process.output}"
      refute_app_errors(process)
    end
  end

  private

  # A request held inside the app (the gate) until the visit is released.
  def request_in_the_app(process)
    gate = rendezvous
    in_flight = connect(process)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    [in_flight, gate.await("entered")]
  end

  # A request held inside the app, an idle keep-alive connection beside it,
  # then TERM: the idle one must be closed at once. Returns the in-flight
  # connection and its rendezvous visit (release it to let the app finish).
  def term_with_a_request_in_flight(process)
    gate = rendezvous
    in_flight = connect(process)
    in_flight.write(request("GET", "/gate?path=#{gate.path}"))
    visit = gate.await("entered")
    idle = idle_keep_alive_connection(process)
    process.signal(:TERM)
    assert_equal "", assert_closed_by_server(idle, "TERM should close idle keep-alive connections")
    [in_flight, visit]
  end

  # A connection that has finished one request and is left open.
  def idle_keep_alive_connection(process)
    connection = connect(process)
    connection.write(request("GET", "/idle"))
    response = connection.read_response
    assert_equal 200, response.status
    refute response.close?
    connection
  end
end
