# frozen_string_literal: true

# Counts the calls a block makes, on this thread, to Thread's and Process's
# own methods (Thread.pass, Process.clock_gettime), by name: how the tests of
# Engine::Turns see a thread pass the GVL on or read a clock.
module CallCounter
  OWNERS = [Thread.singleton_class, Process.singleton_class].freeze

  def counting_calls
    calls = Hash.new(0)
    tracer = TracePoint.new(:c_call) { |tp| calls[tp.method_id] += 1 if OWNERS.include?(tp.defined_class) }
    tracer.enable(target_thread: Thread.current) { yield }
    calls
  end

  def counting_passes(&) = counting_calls(&)[:pass]
end
