# frozen_string_literal: true

# A clock the tests move by hand (Bench::Deadline and Bench::Timing take any
# object answering #call), so budgets and deadlines are tested without sleeping.
class FakeClock
  attr_accessor :now

  def initialize(now = 0.0) = @now = now
  def call = @now
end
