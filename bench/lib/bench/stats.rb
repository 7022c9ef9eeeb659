# frozen_string_literal: true

module Bench
  # The few statistics the reports use.
  module Stats
    module_function

    # The middle value; the mean of the two middle values for an even count.
    def median(values)
      return nil if values.empty?

      sorted = values.sort
      mid = sorted.size / 2
      sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
    end
  end
end
