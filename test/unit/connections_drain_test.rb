# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/listener"
require "spindle/engine"
require "spindle/request/handler"
require_relative "../support/http_client"
require_relative "../support/waiting"

# Each engine, run in-process on a real listener, counts every connection
# it has open in its Connections until it closes it, and none once it has
# drained: an idle keep-alive client is closed by the drain, and one the app
# took over (full rack.hijack) stopped counting when the app took it and is
# still open afterwards, the app's to close.
class ConnectionsDrainTest < Minitest::Test
  include Waiting

  HIJACKED = Queue.new
  APP = lambda do |env|
    HIJACKED << env["rack.hijack"].call if env["PATH_INFO"] == "/hijack"
    [200, { "content-type" => "text/plain" }, ["ok"]]
  end

  def setup
    HIJACKED.clear
    @config = Spindle::Config.new({})
    @log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 16).first
    @clients = []
  end

  def teardown
    @engine&.stop
    @runner&.join(10)
    @clients.each(&:close)
    @hijacked&.close
    @listener.close
  end

  Spindle::Engine.names.each do |name|
    define_method(:"test_#{name}_leaves_no_connection_open_after_a_drain") { drain_leaves_none(name) }
  end

  private

  def drain_leaves_none(name)
    start(name)
    idle = connect
    assert_equal "ok", idle.write(HttpClient.request("GET", "/")).read_response.body
    taken = connect.write(HttpClient.request("GET", "/hijack"))
    wait_until("the app taking the socket", deadline: 10, interval: 0.001) { !HIJACKED.empty? }
    @hijacked = HIJACKED.pop
    wait_until("the hijacked connection no longer counted", deadline: 10, interval: 0.001) do
      @engine.open_connections == 1
    end

    @engine.stop
    assert @runner.join(DEADLINE), "the #{name} engine did not finish its drain"
    assert_equal 0, @engine.open_connections
    assert_equal "", idle.read_until_eof, "the drain closes the idle keep-alive connection"
    @hijacked.write("still the app's")
    assert_equal "still the app's", taken.read_exactly(15), "the hijacked socket is the app's, and open"
  end

  def start(name)
    engine = Spindle::Engine.fetch(name)
    handler = Spindle::Handler.new(APP, @config, @log, multithread: engine.multithread?)
    @engine = engine.new(listeners: [@listener], handler: handler, config: @config, log: @log)
    @runner = Thread.new { @engine.run }
  end

  def connect
    (@clients << HttpClient.connect("127.0.0.1", Integer(@listener.server_port))).last
  end
end
