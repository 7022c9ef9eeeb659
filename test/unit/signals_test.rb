# frozen_string_literal: true

require "test_helper"
require "stringio"
require "spindle/log"
require "spindle/process/signals"
require "spindle/process/phase"
require "spindle/cluster/master"
require_relative "../support/waiting"

# The one way Spindle processes take signals (SignalQueue), and a role's table
# (Signals), with real signals sent to this test process. Each test traps only
# signals the test runner does not use, and puts the previous handlers back.
class SignalsTest < Minitest::Test
  include Waiting

  OURS = %i[USR1 USR2 HUP URG].freeze

  def setup
    @previous = OURS.to_h { |name| [name, Signal.trap(name, "IGNORE")] }
    @phase = Spindle::Phase.new
  end

  def teardown
    Spindle::Reopen.unregister(@reopen) if @reopen
    @previous.each { |name, handler| Signal.trap(name, handler || "DEFAULT") }
  end

  # A worker starts with the master's trap handlers (fork copies them): each
  # signal the master traps must be the worker's own, and mean something alone.
  def test_every_signal_the_master_traps_has_an_entry_in_each_serving_role
    assert_empty Spindle::Cluster::Master::SIGNALS - Spindle::Signals::WORKER.keys
    assert_empty Spindle::Cluster::Master::SIGNALS - Spindle::Signals::SINGLE.keys
  end

  # The handler only queues; the reader acts, on its own thread, in arrival order.
  def test_the_watcher_thread_acts_on_queued_signals_in_order
    seen = Thread::Queue.new
    queue = Spindle::SignalQueue.new.trap(%i[USR1 USR2])
    queue.watch { |name| seen << [name, Thread.current] }
    Process.kill(:USR1, Process.pid)
    first = next_item(seen, "USR1 acted on")
    Process.kill(:USR2, Process.pid)
    second = next_item(seen, "USR2 acted on")

    assert_equal %i[USR1 USR2], [first, second].map(&:first)
    refute_equal Thread.main, first.last, "the action ran in the trap (main thread), not on the watcher"
  end

  # Control commands share the queue with signals, in arrival order.
  def test_pushed_items_and_signals_come_out_in_arrival_order
    queue = Spindle::SignalQueue.new.trap(%i[HUP])
    queue.push(:REFORK)
    Process.kill(:HUP, Process.pid)
    items = []
    wait_until("both items queued", deadline: 10) { (items += queue.drain).size == 2 }
    assert_equal %i[REFORK HUP], items
  end

  # The first stop drains, any later one forces the exit; a String is logged.
  def test_a_table_maps_signals_to_a_drain_a_forced_exit_and_a_log_line
    out = StringIO.new
    events = Thread::Queue.new
    Spindle::Signals.new({ USR1: :drain, USR2: :drain_unlimited, HUP: "HUP ignored: a test" }, Spindle::Log.new(out: out), @phase)
                    .on_stop { |how| stop(events, how) }
                    .on_force { events << [:force] }
                    .install
    Process.kill(:HUP, Process.pid)
    wait_until("the HUP line logged", deadline: 10) { out.string.include?("spindle: HUP ignored: a test") }
    Process.kill(:USR2, Process.pid)
    assert_equal [:stop, :unlimited], next_item(events, "USR2 acted on")
    Process.kill(:USR1, Process.pid)
    assert_equal [:force], next_item(events, "USR1 acted on")
    assert_empty events
  end

  # A worker's master orders its stop over the channel (Signals#order): no
  # signal, so the same stop from the kernel (a signal to the process group)
  # is not a second one, whichever comes first. Only a second signal, or the
  # master's stop at once, forces the exit.
  def test_the_masters_order_is_not_counted_as_a_stop_signal
    events = Thread::Queue.new
    signals = stop_table(events)
    signals.order(:timed)
    assert_equal [:stop, :timed], next_item(events, "the order acted on")
    Process.kill(:USR1, Process.pid) # the same stop, from the kernel
    signals.order(:unlimited) # a late order changes nothing either
    Process.kill(:HUP, Process.pid)
    assert_equal [:reopened], next_item(events, "HUP acted on"), "one signal after the order forced the exit"
    Process.kill(:USR1, Process.pid) # the operator's second
    assert_equal [:force, "second stop signal: exiting at once"], next_item(events, "the second USR1 acted on")
    assert_empty events
  end

  def test_a_signal_then_the_masters_order_drains_once
    events = Thread::Queue.new
    signals = stop_table(events)
    Process.kill(:USR1, Process.pid)
    assert_equal [:stop, :timed], next_item(events, "USR1 acted on")
    signals.order(:timed)
    Process.kill(:HUP, Process.pid)
    assert_equal [:reopened], next_item(events, "HUP acted on"), "the order after the signal forced the exit"
    signals.order(:now)
    assert_equal [:force, "the master stops at once: exiting at once"], next_item(events, "the order to stop at once")
  end

  # A worker's URG: the master asks for a thread dump before a KILL. The
  # dump runs on the watcher thread, never in the trap.
  def test_urg_in_a_workers_table_asks_for_a_thread_dump
    assert_equal :dump, Spindle::Signals::WORKER[:URG]
    events = Thread::Queue.new
    Spindle::Signals.new({ URG: :dump }, Spindle::Log.new(out: StringIO.new), @phase)
                    .on_dump { events << Thread.current }
                    .install
    Process.kill(:URG, Process.pid)
    refute_equal Thread.main, next_item(events, "URG acted on")
  end

  # Whether a stop began is the phase's to say: one the Server began
  # (Phase#end!) is not begun again by a signal, and a stop signal then is
  # the operator's first, not a second.
  def test_a_stop_the_phase_already_ends_is_not_begun_again
    events = Thread::Queue.new
    stop_table(events)
    @phase.end!
    Process.kill(:USR1, Process.pid)
    Process.kill(:HUP, Process.pid)
    assert_equal [:reopened], next_item(events, "HUP acted on"), "a stop began twice, or the first signal forced"
    Process.kill(:USR1, Process.pid)
    assert_equal [:force, "second stop signal: exiting at once"], next_item(events, "the second USR1 acted on")
  end

  # A worker drained to become the mold has not stopped: a stop then still
  # begins (and, once it is the mold, its own on_stop exits).
  def test_a_drain_for_the_mold_is_no_stop
    events = Thread::Queue.new
    signals = stop_table(events)
    @phase.drain!
    signals.order(:timed)
    assert_equal [:stop, :timed], next_item(events, "the order acted on")
  end

  # USR2 restarts a process that serves; once its phase stops (the drain
  # delay, or the drain), it says why it will not.
  def test_usr2_is_refused_once_the_phase_stops
    out = StringIO.new
    restarts = Thread::Queue.new
    Spindle::Signals.new({ USR2: :restart }, Spindle::Log.new(out: out), @phase)
                    .on_restart { restarts << :restart }
                    .install
    Process.kill(:USR2, Process.pid)
    assert_equal :restart, next_item(restarts, "the first USR2 restarts")
    @phase.leave!
    Process.kill(:USR2, Process.pid)
    wait_until("the refusal logged", deadline: 10) { out.string.include?("USR2 ignored: the process is draining") }
    assert_empty restarts
  end

  private

  # What Server#stop_gracefully does to the phase, then a note of it.
  def stop(events, how)
    @phase.end!
    events << [:stop, how]
  end

  # USR1 stands for TERM, HUP for a signal that queues behind it.
  def stop_table(events)
    @reopen = Spindle::Reopen.register("test") { events << [:reopened] }
    Spindle::Signals.new({ USR1: :drain, HUP: :reopen }, Spindle::Log.new(out: StringIO.new), @phase)
                    .on_stop { |how| stop(events, how) }
                    .on_force { |why| events << [:force, why] }
                    .install
  end

  def next_item(queue, what) = wait_until(what, deadline: 10) { queue.pop unless queue.empty? }
end
