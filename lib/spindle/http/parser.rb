# frozen_string_literal: true

require_relative "../boot/native"
require_relative "parser_limits"

module Spindle
  module HTTP
    # Raised by Parser#execute for input that must be refused. #status is the
    # HTTP status to answer with; the connection is always closed after it.
    class ParseError < StandardError
      def status = self.class::STATUS
    end

    class BadRequest < ParseError; STATUS = 400; end
    class PayloadTooLarge < ParseError; STATUS = 413; end
    class URITooLong < ParseError; STATUS = 414; end
    class ExpectationFailed < ParseError; STATUS = 417; end
    class HeaderFieldsTooLarge < ParseError; STATUS = 431; end
    class NotImplemented < ParseError; STATUS = 501; end
    class VersionNotSupported < ParseError; STATUS = 505; end

    ERRORS_BY_STATUS = [BadRequest, PayloadTooLarge, URITooLong, ExpectationFailed,
                        HeaderFieldsTooLarge, NotImplemented, VersionNotSupported]
                       .to_h { |klass| [klass::STATUS, klass] }.freeze

    Native.require_extension("spindle_http")

    # The C request parser (ext/spindle); docs/PARSER.md is its contract.
    # LIMITS: parser_limits.rb.
    class Parser
      def initialize(**limits)
        unknown = limits.keys - LIMITS
        raise ArgumentError, "unknown parser limit: #{unknown.join(', ')}" unless unknown.empty?

        configure(limits)
      end
    end
  end
end
