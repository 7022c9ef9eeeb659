# frozen_string_literal: true

module Bench
  # The few statistics the reports use.
  module Stats
    module_function

    # The middle value; the mean of the two middle values for an even count.
    # nils (a round without that figure) are left out; none left: nil.
    def median(values)
      sorted = values.compact.sort
      return nil if sorted.empty?

      mid = sorted.size / 2
      sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
    end
  end
end
