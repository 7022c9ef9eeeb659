# frozen_string_literal: true

require "minitest/autorun"
require "socket"
require "spindle/config"
require "spindle/request/connection"
require "spindle/engine/outbox"
require "spindle/engine/output_budget"
require_relative "../support/allocations"

# Engine::Outbox as the selector engines use it: what the socket does not take
# waits in the outbox, in order, until #flush_nonblock (the selector) writes
# it; nothing waits for the client on the writing thread. Real socket pairs,
# no stand-ins.
class ConnectionOutboxTest < Minitest::Test
  BIG = 8 * 1024 * 1024 # more than a UNIX socket pair buffers

  def setup
    @client, server = UNIXSocket.pair
    @config = Spindle::Config.new({})
    @conn = Spindle::Connection.new(server, @config, {}, @outbox = Spindle::Engine::Outbox.new(server, @config))
    @budget = Spindle::Engine::OutputBudget.for(@config)
  end

  def teardown
    @client.close
    @conn.close
  end

  def test_a_held_body_the_client_does_not_read_waits_in_the_outbox
    parts = %w[a b c].map { |byte| byte * BIG }
    parts.each { |part| @conn.write(part, true) }

    assert_predicate @outbox, :pending?
    assert_equal parts.join, read_while_flushing(parts.sum(&:bytesize))
    refute_predicate @outbox, :pending?
  end

  def test_small_output_waits_behind_the_outbox_in_order
    @conn.write("x" * BIG, true)
    @conn.write(+"tail")

    assert_equal "#{'x' * BIG}tail", read_while_flushing(BIG + 4)
  end

  def test_the_app_may_reuse_its_buffer_after_a_write
    @conn.write("x" * BIG, true)
    buffer = +"first"
    @conn.write(buffer)
    buffer.replace("later")

    assert_equal "#{'x' * BIG}first", read_while_flushing(BIG + 5)
  end

  def test_a_client_that_is_gone_ends_the_flush
    @conn.write("x" * BIG, true)
    @client.close

    assert_equal :eof, @outbox.flush_nonblock
  end

  def test_what_the_outbox_holds_counts_in_the_process_budget_until_written
    @conn.write("x" * BIG, true)
    held = @budget.held
    assert_operator held, :>, 0
    assert_operator held, :<=, BIG

    read_while_flushing(BIG)
    assert_equal 0, @budget.held
  end

  def test_closing_gives_back_what_was_never_sent
    @conn.write("x" * BIG, true)
    @conn.close

    assert_equal 0, @budget.held
  end

  def test_past_the_budget_it_is_over_until_clients_read
    budget = Spindle::Engine::OutputBudget.for(Spindle::Config.new(max_pending_output: 1))
    budget.take(2 * 1024 * 1024)
    assert_predicate budget, :over?
    released = Thread.new { budget.give(2 * 1024 * 1024) }
    budget.wait_for_room # returns once another thread gives the room back
    released.join
    refute_predicate budget, :over?
  end

  private

  # Reads size bytes from the client side, flushing whenever the server side
  # can write; bounded by the number of rounds, not by time.
  def read_while_flushing(size)
    received = +""
    10_000.times do
      return received if received.bytesize >= size && @outbox.flush_nonblock == :done

      @outbox.flush_nonblock
      received << @client.read_nonblock(1024 * 1024, exception: false).then { |got| got.is_a?(String) ? got : "" }
    end
    flunk "only #{received.bytesize} of #{size} bytes arrived"
  end
end

# The fiber engines: the writer itself waits for the client, at the end of the
# response (Outbox#finish, then the connection closes unless it finished): the
# body is handed over whole first, so all of it is in the outbox and counted
# in the budget while the client reads.
class ConnectionInlineOutboxTest < Minitest::Test
  BIG = 8 * 1024 * 1024

  def setup
    @client, @server = UNIXSocket.pair
    @config = Spindle::Config.new({})
    @outbox = Spindle::Engine::Outbox.new(@server, @config)
    @conn = Spindle::Connection.new(@server, @config, {}, @outbox)
    @budget = Spindle::Engine::OutputBudget.for(@config)
  end

  def teardown
    @client.close
    @conn.close
  end

  def test_a_held_body_is_counted_then_written_when_the_response_ends
    3.times { @conn.write("x" * BIG, true) }
    assert_operator @budget.held, :>, 2 * BIG, "the body should be handed over before any wait"

    reader = Thread.new { read_exactly(3 * BIG) }
    end_response # waits for the client to take the rest
    assert_equal 3 * BIG, reader.value.bytesize
    assert_equal 0, @budget.held
    refute_predicate @server, :closed?
  end

  def test_a_response_without_output_waiting_keeps_the_connection_open
    @conn.write(+"small")
    end_response

    refute_predicate @server, :closed?
    assert_equal "small", @client.read_nonblock(16)
  end

  def test_a_client_gone_mid_response_is_closed_and_its_bytes_given_back
    @conn.write("x" * BIG, true)
    @client.close
    end_response

    assert_predicate @server, :closed?
    assert_equal 0, @budget.held
  end

  private

  # What FiberLoop does once the handler has written a response.
  def end_response
    @conn.close unless @outbox.finish
  end

  def read_exactly(size)
    received = +""
    received << @client.readpartial(1024 * 1024) while received.bytesize < size
    received
  end
end

# The fiber engines call Outbox#finish after every response: with nothing
# owed it must cost nothing (docs/PERFORMANCE.md counts objects per request).
class OutboxFinishCostTest < Minitest::Test
  include Allocations

  def test_finishing_with_nothing_owed_allocates_nothing
    client, server = UNIXSocket.pair
    outbox = Spindle::Engine::Outbox.new(server, Spindle::Config.new({}))
    # Once to warm up: run first in its process, the measuring code's own
    # call sites make their caches (objects too) on their first call.
    allocations { 100.times { outbox.finish } }
    # 100 calls: the loop's own odd object aside, none (one per call before).
    assert_operator allocations { 100.times { outbox.finish } }, :<=, 1
  ensure
    client&.close
    server&.close
  end
end
