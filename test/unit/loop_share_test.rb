# frozen_string_literal: true

require "test_helper"
require "io/wait"
require "spindle/engine/loop_share"
require_relative "../support/waiting"

# hybrid's loops split --max-connections: the process holds what the flag
# says, as under every other engine.
class LoopShareTest < Minitest::Test
  include Waiting

  def share_of(loops, max)
    share = Spindle::Engine::LoopShare.new(loops)
    tables = Array.new(loops) { {}.compare_by_identity.tap { |table| share.join(table) } }
    tables.map { |table| share.cap(table, max) }
  end

  def test_the_loops_shares_add_up_to_the_cap
    assert_equal [820, 819, 819, 819, 819], share_of(5, 4096)
    assert_equal [10, 10], share_of(2, 20)
    assert_equal 4096, share_of(5, 4096).sum
  end

  def test_every_loop_may_hold_one_even_under_a_tiny_cap
    assert_equal [1, 1, 1], share_of(3, 2)
  end

  def test_a_table_that_never_joined_is_refused
    share = Spindle::Engine::LoopShare.new(2)
    assert_raises(ArgumentError) { share.cap({}, 10) }
  end

  # A loop behind that sleeps in its selector takes clients once it runs:
  # the loop ahead keeps waiting for it. One running Ruby (a request's CPU
  # work) cannot: only then may the loop ahead stop waiting.
  def test_only_loops_behind_that_run_ruby_count_as_busy
    share = Spindle::Engine::LoopShare.new(2)
    ahead = {}.compare_by_identity.tap { |table| share.join(table) }
    behind = {}.compare_by_identity.tap { |table| share.join(table) }
    4.times { |i| ahead[i] = true }
    refute share.behind_busy?(ahead), "a loop not running yet has taken no turn"

    # Waiting on a descriptor with the GVL let go, as a loop's selector does.
    reader, writer = IO.pipe
    asleep = Thread.new { share.running(behind) && reader.wait_readable }
    wait_until("the loop thread asleep", deadline: 10, interval: 0.001) { asleep.status == "sleep" }
    refute share.behind_busy?(ahead), "asleep in its selector"

    spinning = Thread.new { share.running(behind) && loop { Thread.pass } }
    wait_until("the running loop counted busy", deadline: 10, interval: 0.001) { share.behind_busy?(ahead) }
  ensure
    [asleep, spinning].compact.each(&:kill).each(&:join)
    [reader, writer].compact.each(&:close)
  end

  # What LoopShare#lighter asks of a loop, through the callable its Seat
  # holds (FiberLoop#held?).
  FakeLoop = Struct.new(:turned) do
    def held? = !turned
  end

  # A loop joined with its table, placed clients counted on its Seat
  # (returned); its thread runs block (nil: not running yet).
  def placing(share, placed, turned: true, &block)
    table = {}.compare_by_identity
    fake = FakeLoop.new(turned)
    seat = share.join(table, inbox: :an_inbox, held: fake.method(:held?))
    seat.placed = placed
    (@fakes ||= {}.compare_by_identity)[seat] = fake
    if block
      joined = Queue.new
      (@threads ||= []) << Thread.new { share.running(table) && joined << true && block.call }
      joined.pop
    end
    seat
  end

  # A client goes to the loop holding the fewest, if it holds fewer than the
  # loop that accepted it: the loops get equal turns with the GVL, so their
  # clients are served alike only when they hold alike (FiberLoop#place).
  def test_a_client_goes_to_the_loop_holding_the_fewest
    share = Spindle::Engine::LoopShare.new(4)
    busy = -> { loop { Thread.pass } }
    accepting = placing(share, 5, &busy)
    placing(share, 4, &busy)
    fewest = placing(share, 2, &busy)
    placing(share, 3, &busy)
    wait_until("every loop running", deadline: 10, interval: 0.001) { @threads.all? { |t| t.status == "run" } }

    assert_same fewest, share.lighter(accepting)
    assert_nil share.lighter(fewest), "none holds fewer: it keeps the client"
  ensure
    @threads&.each(&:kill)&.each(&:join)
  end

  # #place counts a client on the loop it chose before it returns, so the
  # next choice, from whichever loop, sees it: clients accepted one after the
  # other by any loops end up spread within one, and a client that leaves
  # (#release) or stays with the loop that accepted it (#move) is counted off.
  def test_place_counts_each_client_at_once
    share = Spindle::Engine::LoopShare.new(3)
    reader, writer = IO.pipe
    loops = Array.new(3) { placing(share, 0) { reader.wait_readable } }
    wait_until("the loops asleep", deadline: 10, interval: 0.001) { @threads.all? { |t| t.status == "sleep" } }

    accepting = [0, 0, 1, 0, 2, 2, 1, 0, 0, 1, 2, 0, 0, 0]
    accepting.each { |i| share.place(loops[i]) }
    assert_equal [5, 5, 4], loops.map(&:placed).sort.reverse
    assert_equal accepting.size, loops.sum(&:placed)

    fewest = loops.min_by(&:placed)
    share.move(fewest, loops[0])
    share.release(loops[0])
    assert_equal accepting.size - 1, loops.sum(&:placed)
    assert_equal 3, fewest.placed
  ensure
    @threads&.each(&:kill)&.each(&:join)
    [reader, writer].compact.each(&:close)
  end

  # A loop running Ruby whose scheduler has not turned is held by a request
  # that does not yield: a client handed to it would wait for that request.
  # One asleep in its selector takes it at once; one not running yet, never.
  def test_only_a_loop_that_will_start_the_client_soon_gets_it
    share = Spindle::Engine::LoopShare.new(4)
    reader, writer = IO.pipe
    accepting = placing(share, 5) { loop { Thread.pass } }
    held = placing(share, 1, turned: false) { loop { Thread.pass } }
    placing(share, 0) # not running
    asleep = placing(share, 3, turned: false) { reader.wait_readable }
    wait_until("the loops running or asleep", deadline: 10, interval: 0.001) do
      @threads[0].status == "run" && @threads[1].status == "run" && @threads[2].status == "sleep"
    end

    assert_same asleep, share.lighter(accepting)
    @fakes[held].turned = true
    assert_same held, share.lighter(accepting), "its scheduler turns again"
  ensure
    @threads&.each(&:kill)&.each(&:join)
    [reader, writer].compact.each(&:close)
  end
end
