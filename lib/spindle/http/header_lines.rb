# frozen_string_literal: true

module Spindle
  module HTTP
    # Turns an app's response headers into header lines, in one pass, and
    # remembers what the server needs to know about them: the declared length,
    # "connection: close", a Date, a partial-hijack callable.
    #
    # Nothing the app returns can split the response. A name that is not a token,
    # or a value with CR or NUL, is dropped. A value with LF is a Rack 2 multi-value
    # header: each line becomes its own field of the same name. Framing fields
    # (transfer-encoding) are the server's, never the app's.
    class HeaderLines
      TOKEN = /\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\z/
      UNSAFE = /[\r\n\0]/
      DIGITS = /\A\d{1,18}\z/

      attr_reader :content_length, :close, :date, :hijack, :dropped

      # skip_length is positional: Class#new forwarding a keyword allocates a Hash
      # per call on Ruby 3.1, and this runs once per response.
      def initialize(head, headers, skip_length = false)
        @head = head
        @skip_length = skip_length
        @content_length = nil
        @close = @date = false
        @hijack = nil
        @dropped = 0
        headers.each { |name, value| add(name, value) }
      end

      private

      def add(name, value)
        return drop unless name.is_a?(String) && name.match?(TOKEN)
        return if special?(name, value)

        if value.is_a?(Array)
          value.each { |v| add_value(name, v) }
        else
          add_value(name, value)
        end
      end

      # The fields the server acts on. Returns true when the field is not to be
      # written as the app gave it.
      def special?(name, value)
        case name.bytesize
        when 4 then @date ||= name.casecmp?("date")
        when 10 then return note_connection(value) if name.casecmp?("connection")
        when 11 then return @hijack = value if name == "rack.hijack"
        when 14 then return note_content_length(value) if name.casecmp?("content-length")
        when 17 then return true if name.casecmp?("transfer-encoding")
        end
        name.start_with?("rack.")
      end

      def note_connection(value)
        @close = true if value.is_a?(String) && value.match?(/\bclose\b/i)
        true # the server writes its own connection field
      end

      def note_content_length(value)
        return true if @skip_length
        return drop unless value.is_a?(String) && value.match?(DIGITS)

        @content_length = value.to_i
        false
      end

      def add_value(name, value)
        return drop unless value.is_a?(String)

        if value.match?(UNSAFE)
          return drop if value.include?("\r") || value.include?("\0")

          return value.split("\n").each { |line| add_value(name, line) }
        end
        @head << name << ": " << value << "\r\n"
      end

      def drop
        @dropped += 1
        true
      end
    end
  end
end
