# frozen_string_literal: true

# A library the stall test's app calls, laid out as an installed gem is
# (.../gems/NAME-VERSION/lib): the code that holds the loop is often a
# library's, and a stall warning must show it wherever it lives.
module FifoLib
  def self.wait_for(fifo) = read_when_written(fifo)

  # Opening a FIFO blocks in open(2) until a writer comes: a call the fiber
  # scheduler does not see, so it holds the whole event loop. (A blocked
  # call, not CPU work: the stall detector reports it however loaded the
  # machine is.)
  def self.read_when_written(fifo)
    File.read(fifo)
  end
end
