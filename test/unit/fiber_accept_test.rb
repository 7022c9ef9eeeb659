# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/listener"
require "spindle/request/handler"
require "spindle/engine/fibers"
require_relative "../support/http_client"
require_relative "../support/waiting"

# A busy fiber loop takes a burst of new clients in one turn, not one per
# turn. Each start of a connection's fiber used to send the acceptor to the
# back of the loop's ready queue, so a loop busy with its open connections
# accepted one client per turn; when 256 clients reconnected together, the
# last waited ~250 ms in the backlog. The engine runs in-process here, on a
# real listener. BUSY requests keep the loop turning: each yields to the loop
# and counts a tick every turn. One request then holds the loop (it spins
# without yielding) while a child process connects the whole burst and sends
# its requests, so the whole burst waits in the backlog when the loop next
# accepts, however fast this Ruby runs. Each response of the burst says the
# ticks counted before it: ticks, not a clock, measure how long it waited.
class FiberAcceptTest < Minitest::Test
  include Waiting

  BUSY = 4
  BURST = 24
  STATE = Struct.new(:ticks, :busy, :stop, :holding, :released).new
  APP = lambda do |env|
    case env["PATH_INFO"]
    when "/busy" then tick_until_stopped
    when "/hold" then hold_the_loop
    end
    [200, { "content-type" => "text/plain" }, [STATE.ticks.to_s]]
  end

  def self.tick_until_stopped
    STATE.busy += 1
    until STATE.stop
      STATE.ticks += 1
      Fiber.scheduler.yield
    end
  end

  # read_nonblock never yields to the fiber scheduler: nothing else in the
  # loop runs until the child writes.
  def self.hold_the_loop
    STATE.holding.write("h")
    nil until STATE.released.read_nonblock(1, exception: false).is_a?(String)
  end

  def setup
    STATE.ticks = STATE.busy = 0
    STATE.stop = false
    @holding_r, STATE.holding = IO.pipe
    STATE.released, @released_w = IO.pipe
    @config = Spindle::Config.new({})
    @log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 128).first
  end

  def teardown
    STATE.stop = true
    @engine&.stop
    @runner&.join(10)
    @clients&.each(&:close)
    @listener&.close
    [@holding_r, @released_w, STATE.holding, STATE.released].each { |io| io&.close }
  end

  def test_a_busy_loop_takes_a_burst_of_clients_in_one_turn
    start_engine
    @clients = Array.new(BUSY) { connect.write(HttpClient.request("GET", "/busy")) }
    wait_until("the busy requests turning the loop", deadline: 10, interval: 0.001) do
      STATE.busy == BUSY && STATE.ticks > BUSY * 10
    end
    turns = burst_ticks.then { |ticks| (ticks.max - ticks.min) / BUSY }
    # One client per turn put BURST - 1 (23) turns between the first and
    # the last; taken in one burst, they start at the same turn.
    assert_operator turns, :<=, 1, "the burst was spread over #{turns} turns of the loop"
  end

  private

  def start_engine
    handler = Spindle::Handler.new(APP, @config, @log, multithread: false)
    @engine = Spindle::Engine::Fibers.new(listeners: [@listener], handler: handler, config: @config, log: @log)
    @runner = Thread.new { @engine.run }
    connect.tap { |client| client.write(HttpClient.request("GET", "/")).read_response }.close
  end

  # The burst connects from a child process, while a request of the test's
  # holds the loop: the child waits until it holds, connects every client
  # and sends its request, then lets the loop go.
  def burst_ticks
    @clients << connect.write(HttpClient.request("GET", "/hold"))
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      @holding_r.read(1)
      clients = Array.new(BURST) { connect.write(HttpClient.request("GET", "/new")) }
      @released_w.write("r")
      writer.write(clients.map { |client| client.read_response.body }.join(","))
      exit!(0)
    end
    writer.close
    reader.read.split(",").map { |ticks| Integer(ticks) }
  ensure
    reader&.close
    Process.wait(pid) if pid
  end

  def connect = HttpClient.connect("127.0.0.1", Integer(@listener.server_port))
end
