# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/request/handler"
require "spindle/engine/outbox"
require "spindle/engine/deadlines"
require "spindle/engine/selection"
require "spindle/engine/mailbox"
require "spindle/engine/park"

# The threads engine's way back from the pool to the reactor: pool threads
# post connections with their outcome, the reactor's thread takes them
# between selects, and a post wakes a select that is waiting.
class MailboxTest < Minitest::Test
  def setup
    @config = Spindle::Config.new({})
    deadlines = Spindle::Engine::Deadlines.new(@config)
    @selection = Spindle::Engine::Selection.new([], Spindle::HTTP::ResponseWriter.new, deadlines,
                                                Spindle::Engine::Connections.new)
    @park = Spindle::Engine::Park.new
    @mailbox = Spindle::Engine::Mailbox.new(@selection, @park)
    @sockets = []
  end

  def teardown
    @park.release
    @selection.close
    @sockets.each(&:close)
  end

  # Posted connections are counted until the reactor takes them.
  def test_size_counts_connections_posted_and_not_taken
    Thread.new { @mailbox.post(connection, :keep_alive); @mailbox.post(connection, :close) }.join
    assert_equal 2, @mailbox.size
    @mailbox.take { |_conn, _outcome| nil }
    assert_equal 0, @mailbox.size
  end

  def test_connections_come_back_with_their_outcome
    kept = connection
    closing = connection
    Thread.new { @mailbox.post(kept, :keep_alive); @mailbox.post(closing, :close) }.join

    taken = []
    @mailbox.take { |conn, outcome| taken << [conn, outcome] }
    assert_equal [[closing, :close], [kept, :keep_alive]], taken
    assert_predicate @mailbox, :empty?
  end

  # A select with no timeout returns only when woken: the join's deadline
  # fails the test if the post does not wake it (no sleep orders the two; a
  # wakeup before the select starts makes it return at once).
  def test_a_post_wakes_a_waiting_select
    selecting = Thread.new { @selection.select(nil) { flunk "nothing is watched" } }
    @mailbox.post(connection, :keep_alive)
    assert selecting.join(10), "the post did not wake the select"
    refute_predicate @mailbox, :empty?
  ensure
    selecting&.kill
  end

  private

  def connection
    client, server = UNIXSocket.pair
    @sockets << client << server
    Spindle::Connection.new(server, @config, {}, Spindle::Engine::Outbox.new(server, @config))
  end
end
