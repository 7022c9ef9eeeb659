# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/process/server"
require_relative "../support/http_client"
require_relative "../support/waiting"

# The Server is the one writer of its process's Phase, and a stop is a move
# of it: the engine, the handler and the others follow it (the stop's
# hand-wiring used to set each of them). Run in-process on a real listener
# with the default engine, unpinned; nothing forks, so a forced exit is not tried here.
class ServerPhaseTest < Minitest::Test
  include Waiting

  APP = ->(_env) { [200, { "content-type" => "text/plain" }, ["ok"]] }

  def setup
    @out = StringIO.new
    @log = Spindle::Log.new(out: @out, err: @out)
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 16).first
    # No CPU pinning: --cpu-affinity=auto would pin this process's app
    # threads and start its watch, and every unit test shares this process
    # (cpu_affinity_test found its threads on one CPU).
    config = Spindle::Config.new({ cpu_affinity: false })
    @server = Spindle::Server.new(APP, config, @log, listeners: [@listener]).prepare
    @phase = @server.phase
    @moves = []
    @phase.on_change { |name| @moves << name }
    @runner = Thread.new { @server.serve }
  end

  def teardown
    @client&.close
    @server.drain(nil) if @runner.alive? # a failed test must not leave the engine serving
    @runner.join(10)
    @listener.close
  end

  def test_a_drain_moves_the_phase_once_and_the_engine_follows
    assert_equal 200, get.status
    assert_predicate @phase, :serving?
    @server.drain(nil)
    assert_predicate @phase, :draining?
    assert @runner.join(10), "the engine did not stop when the phase drained"
    @server.drain(nil) # a stop while draining to become the mold: no second move
    assert_equal [:draining], @moves
    assert_match(/spindle: draining \(no time limit\)/, wait_for_log(/draining/).last,
                 "the drain's line is not the last: it must say every response now closes")
  end

  # The drain delay (--drain-delay) is a phase of its own: still served,
  # but every response closes its connection; then the drain follows.
  def test_a_stop_with_a_drain_delay_leaves_the_pool_then_drains
    @client = connect
    refute_predicate get(@client), :close?
    @server.stop_gracefully(nil, drain_delay: 0.2)
    assert_equal :leaving, @phase.name
    assert_predicate @phase, :ending?
    response = get(@client)
    assert_equal 200, response.status, "the drain delay still serves"
    assert_predicate response, :close?
    wait_until("the drain after the delay", deadline: 10) { @phase.draining? }
    assert @runner.join(10), "the engine did not stop when the phase drained"
    assert_equal %i[leaving draining], @moves
  end

  # A worker drained for its master's BecomeMold turns into the mold only
  # if no stop came first; after one, it ends (Phase#once_drained).
  def test_a_stop_before_the_mold_ends_the_worker
    @server.stop_gracefully(nil, drain_delay: 0)
    assert_predicate @phase, :draining?
    refute @server.become_mold
  end

  def test_a_mold_drain_is_no_stop
    @server.drain(nil)
    refute_predicate @phase, :ending?
    assert @server.become_mold
  end

  private

  def connect = HttpClient.connect("127.0.0.1", Integer(@listener.server_port))

  # One request; on a connection of its own unless one is given.
  def get(client = nil)
    own = client.nil?
    client ||= connect
    client.write(HttpClient.request("GET", "/")).read_response
  ensure
    client&.close if own
  end

  def wait_for_log(pattern)
    wait_until("a log line matching #{pattern.inspect}", deadline: 10) do
      lines = @out.string.lines.grep(/spindle: /)
      lines if lines.any?(pattern)
    end
  end
end
