# frozen_string_literal: true

module Spindle
  class Config
    # Raised for a configuration value that cannot be used; the CLI prints the
    # message as one line and exits non-zero.
    class Error < StandardError; end

    # Coercions shared by option definitions. Each takes what the CLI or the DSL
    # was given and returns the value, or raises Config::Error saying why not.
    module Coerce
      module_function

      def positive_integer(raw, what)
        n = Integer(raw, exception: false)
        raise Error, "#{what} must be a positive integer, got #{raw.inspect}" unless n&.positive?

        n
      end

      def non_negative_integer(raw, what)
        n = Integer(raw, exception: false)
        raise Error, "#{what} must be a non-negative integer, got #{raw.inspect}" unless n && n >= 0

        n
      end

      def seconds(raw, what)
        n = Float(raw, exception: false)
        raise Error, "#{what} must be a positive number of seconds, got #{raw.inspect}" unless n&.positive?

        n
      end

      def boolean(raw)
        [true, "true", "yes", "1", "on"].include?(raw)
      end

      # "5" means 5:5; "0:16" means min 0, max 16.
      def thread_range(raw)
        min, max = raw.is_a?(Array) ? raw : raw.to_s.split(":", 2)
        max ||= min
        min = non_negative_integer(min, "threads minimum")
        max = positive_integer(max, "threads maximum")
        raise Error, "threads minimum #{min} is above maximum #{max}" if min > max

        [min, max]
      end
    end
  end
end
