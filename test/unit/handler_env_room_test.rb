# frozen_string_literal: true

require_relative "../test_helper"
require "objspace"
require "spindle/listener"
require "spindle/request/handler"
require "spindle/config"
require "spindle/log"
require "socket"

# Handler::ENV_ROOM: each connection's env template, and so each request's
# env (a copy of it), is made with room for its entries, so the env is not
# grown and rehashed while a request is parsed into it. Sizes are Ruby's own
# account (ObjectSpace.memsize_of): a table that grows takes a bigger one.
class HandlerEnvRoomTest < Minitest::Test
  REQUEST = "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n"

  def setup
    @listener = Spindle::Listener.open("tcp://127.0.0.1:0", backlog: 8).first
    @client = TCPSocket.new("127.0.0.1", @listener.io.local_address.ip_port)
    @server = @listener.io.accept_nonblock.first
    config = Spindle::Config.new({})
    log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    @handler = Spindle::Handler.new(->(_env) { [200, {}, []] }, config, log, multithread: false)
    @conn = @handler.open_connection(@server, @listener, Spindle::Engine::Outbox.new(@server, config))
  end

  def teardown
    @conn&.close
    @client&.close
    @listener&.close
  end

  def test_a_request_env_is_not_grown_while_it_is_parsed
    template = ObjectSpace.memsize_of(@conn.env_template)
    env = read_request
    assert_operator env.size, :<=, Spindle::Handler::ENV_ROOM
    assert_equal template, ObjectSpace.memsize_of(env), "the env outgrew its template's room (#{env.size} entries)"
  end

  def test_the_template_has_room_for_env_room_entries
    env = @conn.env_template.dup
    before = ObjectSpace.memsize_of(env)
    (Spindle::Handler::ENV_ROOM - env.size).times { |i| env["x#{i}"] = i }
    assert_equal before, ObjectSpace.memsize_of(env), "#{env.size} entries did not fit"
  end

  private

  def read_request
    @client.write(REQUEST)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    state = nil
    until state == :complete
      flunk "no request within 5 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      @server.wait_readable(1)
      state = @conn.read_nonblock == :data ? @conn.advance : nil
    end
    @conn.finish_request_env.tap { |env| env["rack.response_finished"] = [] }
  end
end
