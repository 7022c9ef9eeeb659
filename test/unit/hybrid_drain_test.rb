# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/listener"
require "spindle/request/handler"
require "spindle/engine/fiber_loop"
require "spindle/engine/loop_share"
require "spindle/process/phase"
require_relative "../support/http_client"
require_relative "../support/waiting"

# A hybrid loop drains with a client another loop handed it and it had not
# started yet: the client connected before the drain, so it is served (with
# "connection: close"), as every client accepted is. The loop used to close
# it unanswered; a client reconnecting as its worker began to drain in a
# phased restart got no response.
class HybridDrainTest < Minitest::Test
  include Waiting

  APP = ->(_env) { [200, { "content-type" => "text/plain" }, ["served"]] }

  def setup
    @config = Spindle::Config.new(loops: 2, stall_threshold: 30)
    @log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 8).first
    @phase = Spindle::Phase.new
  end

  def teardown
    @runner&.join(10)
    @client&.close
    @accepted&.close unless @accepted&.closed?
    @listener&.close
  end

  # The loop waits in its selector; the drain wakes it, and a client is
  # handed over before its thread runs again, as when a loop accepting on
  # another thread hands one over just as the worker begins to drain: the
  # loop wakes to drain first, and its inbox's fiber never takes the client.
  def test_a_client_handed_over_as_the_loop_drains_is_served
    fiber_loop = loop_in_share
    before = Thread.list
    @runner = Thread.new { fiber_loop.run }
    wait_until("the loop waiting", deadline: 10, interval: 0.001) do
      (started = Thread.list - before).size == 2 && started.all? { |t| t.status == "sleep" }
    end
    @client = HttpClient.connect("127.0.0.1", Integer(@listener.server_port))
    @client.write(HttpClient.request("GET", "/"))
    @listener.io.wait_readable(10)
    @accepted = @listener.accept_nonblock

    @phase.drain!
    fiber_loop.wake
    assert fiber_loop.instance_variable_get(:@inbox).hand(@accepted, @listener), "handed before the loop closed its inbox"

    response = @client.read_response
    assert_equal 200, response.status
    assert_equal "served", response.body
    assert response.close?, "a draining loop says connection: close"
    assert @runner.join(10), "the loop ends once its client is served"
  end

  private

  def loop_in_share
    handler = Spindle::Handler.new(APP, @config, @log, multithread: true, phase: @phase)
    Spindle::Engine::FiberLoop.new(listeners: [], handler: handler, config: @config, log: @log,
                                   share: Spindle::Engine::LoopShare.new(2), phase: @phase)
  end
end
