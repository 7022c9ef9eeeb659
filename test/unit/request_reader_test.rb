# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "stringio"
require "async"
require "spindle/config"
require "spindle/log"
require "spindle/request/handler"
require "spindle/request/connection"
require "spindle/engine/deadlines"
require "spindle/engine/outbox"
require "spindle/engine/request_reader"

# The fiber engines' read of the next request on a keep-alive connection.
# A wait on the socket costs two epoll_ctl calls in io-event (the socket is
# added for the wait and removed once the fiber waits elsewhere), so a
# request that is already there must be read without one; one that is not
# yet there is waited for. A real connection on a real socket pair, in an
# Async reactor; the connection counts its waits.
class RequestReaderTest < Minitest::Test
  REQUEST = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

  # A Connection that counts its waits for the client.
  class CountedConnection < Spindle::Connection
    def waits = @waits || 0

    def wait_for_client
      @waits = waits + 1
      super
    end
  end

  def setup
    @client, server = UNIXSocket.pair
    config = Spindle::Config.new({})
    log = Spindle::Log.new(out: StringIO.new, err: StringIO.new, quiet: true)
    handler = Spindle::Handler.new(->(_env) { [200, {}, []] }, config, log, multithread: false)
    @conn = CountedConnection.new(server, config, {}, Spindle::Engine::Outbox.new(server, config))
    connections = Spindle::Engine::Connections.new
    connections.add(@conn)
    @reader = Spindle::Engine::RequestReader.new(handler, config, Spindle::Engine::Deadlines.new(config), connections)
  end

  def teardown
    @client.close
    @conn.close
  end

  def test_a_next_request_already_sent_is_read_without_a_wait
    Sync do
      serve_first_request
      @client.write(REQUEST)

      assert_equal :complete, @reader.read_next(@conn)
      assert_equal 0, @conn.waits, "read_next waited for a request that was already in the socket"
    end
  end

  def test_a_next_request_not_yet_sent_is_waited_for
    Sync do |task|
      serve_first_request
      writer = task.async do
        deadline = now + 5 # bounded: a reader that never waits fails the assertions below
        Fiber.scheduler.yield until @conn.waiting_for_client? || now > deadline
        @client.write(REQUEST)
      end

      assert_equal :complete, @reader.read_next(@conn)
      assert_equal 1, @conn.waits
      writer.wait
    end
  end

  private

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def serve_first_request
    @client.write(REQUEST)
    assert_equal :complete, @reader.read(@conn)
    @conn.finish_request_env
    @conn.reset_for_next_request
  end
end
