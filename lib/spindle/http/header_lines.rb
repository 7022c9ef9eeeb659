# frozen_string_literal: true

require_relative "octets"

module Spindle
  module HTTP
    # Turns an app's response headers into header lines, in one pass, and
    # remembers what the server needs to know about them: the declared length,
    # "connection: close", a Date, a partial-hijack callable, and for a 101 the
    # upgrade fields.
    #
    # Nothing the app returns can split the response. A name that is not a token,
    # a value that is not a String (or an Array of them), or a value with CR or
    # NUL is dropped, and the reason kept in #problems for the log: an app error
    # is never dropped silently. A value with LF is a Rack 2 multi-value header:
    # each line becomes its own field of the same name. Framing fields
    # (transfer-encoding) are the server's, never the app's; so is "connection",
    # except on a 101, where the app's "connection: upgrade" must reach the
    # client (RFC 9110 §7.8).
    class HeaderLines
      # Headers the server made itself and rendered once (StaticFiles keeps
      # one per file): a frozen Hash like any other for whoever reads it,
      # and #lines, its fields as they go on the wire, which the writer
      # copies instead of checking each field again. Only fields that need
      # no special handling (see #special?) besides content-length.
      class Rendered < Hash
        attr_reader :lines, :content_length

        def initialize(fields)
          super()
          update(fields)
          checked = HeaderLines.new(@lines = +"".b, fields, 200)
          raise ArgumentError, "cannot render #{fields}: #{checked.problems&.join('; ') || 'connection'}" if
            checked.problems || checked.close || checked.hijack || checked.upgrade

          @lines.freeze
          @content_length = checked.content_length
          freeze
        end
      end

      TOKEN = /\A[!#$%&'*+\-.^_`|~0-9A-Za-z]+\z/
      UNSAFE = /[\r\n\0]/
      DIGITS = /\A\d{1,18}\z/
      UPGRADE_OPTION = /\bupgrade\b/i
      SWITCHING_PROTOCOLS = 101
      # How much of a rejected name or value a log line shows.
      SHOWN = 60

      attr_reader :content_length, :close, :date, :hijack, :upgrade, :connection_upgrade, :problems

      # status is positional: Class#new forwarding a keyword allocates a Hash per
      # call on Ruby 3.1, and this runs once per response.
      def initialize(head, headers, status)
        @head = head
        # 1xx, 204 and 205 carry no content, so the app's length is not theirs to
        # declare (205: the writer declares 0 itself).
        @skip_length = status < 200 || status == 204 || status == 205
        @switching = status == SWITCHING_PROTOCOLS
        @content_length = nil
        @close = @date = @upgrade = @connection_upgrade = false
        @hijack = nil
        @problems = nil
        return headers.each { |name, value| add(name, value) } unless headers.is_a?(Rendered)

        @head << headers.lines
        @content_length = headers.content_length
      end

      private

      def add(name, value)
        unless name.is_a?(String) && name.valid_encoding? && name.match?(TOKEN)
          return drop("header name #{shown(name)} is not a token")
        end
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
        when 7 then @upgrade ||= name.casecmp?("upgrade")
        when 10 then return note_connection(value) if name.casecmp?("connection")
        when 11 then return @hijack = value if name == "rack.hijack"
        when 14 then return note_content_length(value) if name.casecmp?("content-length")
        when 17 then return true if name.casecmp?("transfer-encoding")
        end
        name.start_with?("rack.")
      end

      # The server writes its own connection field, except on a 101 that names
      # the upgrade: that one is the app's, and is written as given.
      def note_connection(value)
        return @close = true if value.is_a?(String) && value.match?(/\bclose\b/i)
        return true unless @switching && value.is_a?(String) && value.match?(UPGRADE_OPTION)

        @connection_upgrade = true
        false
      end

      def note_content_length(value)
        return true if @skip_length
        return drop("content-length #{shown(value)} is not a length") unless value.is_a?(String) && value.match?(DIGITS)
        # Two lengths (names differing in case) are two framings of one response.
        return drop("content-length #{shown(value)} is a second length; the first stands") if @content_length

        @content_length = value.to_i
        false
      end

      def add_value(name, value)
        unless value.is_a?(String)
          return drop("header #{name}: the value is #{value.class} #{shown(value)}; Rack requires a String " \
                      "or an Array of Strings")
        end

        # Field values are octets: one that is not valid in its encoding (raw
        # bytes in a UTF-8 String) is checked, and split, as bytes.
        bytes = value.valid_encoding? ? value : value.b
        if bytes.match?(UNSAFE)
          return drop("header #{name}: the value has CR or NUL") if value.include?("\r") || value.include?("\0")

          return bytes.split("\n").each { |line| add_value(name, line) }
        end
        @head << name << ": " << Octets.of(value) << "\r\n"
      end

      def drop(problem)
        (@problems ||= []) << problem
        true
      end

      def shown(object)
        text = object.inspect
        text.size > SHOWN ? "#{text[0, SHOWN]}..." : text
      end
    end
  end
end
