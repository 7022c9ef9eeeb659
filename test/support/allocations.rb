# frozen_string_literal: true

# Objects the block allocates, by Ruby's own count (GC.stat), for tests that
# keep a path on every request free of allocations.
module Allocations
  def allocations
    before = GC.stat(:total_allocated_objects)
    yield
    GC.stat(:total_allocated_objects) - before
  end
end
