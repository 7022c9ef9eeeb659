# frozen_string_literal: true

module Spindle
  module HTTP
    # A response is bytes. The writer builds each one in a binary String, and
    # appends an app's Strings through here: a UTF-8 header with "é" and a
    # body part read as binary cannot be joined by String#<< (it raises
    # Encoding::CompatibilityError), though their bytes go out side by side.
    module Octets
      # string itself when a binary String takes it as it is (binary, or
      # ASCII only); otherwise a binary copy.
      def self.of(string) = string.encoding == Encoding::BINARY || string.ascii_only? ? string : string.b
    end
  end
end
